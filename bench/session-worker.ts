/**
 * The worker of bench/sessions.ts, alone in a process so that the bench can
 * SIGKILL it: opens a session with the typed client's keeper, takes `--locks`
 * locks (`lock-<i>`) under it, prints one JSON line `{session, expiresAt}`
 * on stdout, and keeps the session alive until it is killed.
 *
 *   node --import tsx bench/session-worker.ts --nats <url> --prefix <p> [--locks 1000] [--ttl-ms 3000]
 */
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { LeaseholdClient } from "../src/index.ts";

const { values } = parseArgs({
  options: {
    nats: { type: "string" },
    prefix: { type: "string" },
    locks: { type: "string", default: "1000" },
    "ttl-ms": { type: "string", default: "3000" },
  },
  strict: true,
});

const nc = await connect({ servers: (values.nats ?? "").split(","), name: "leasehold-session-worker", noAsyncTraces: true });
const client = new LeaseholdClient(nc, { prefix: values.prefix ?? "leasehold" });
const session = await client.session.keep({
  owner: "session-worker",
  ttlMs: Number(values["ttl-ms"]),
  onLost: (e) => {
    process.stderr.write(`session lost: ${e.message}\n`);
    process.exit(1);
  },
});
const count = Number(values.locks);
let next = 0;
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (next < count) await session.acquire(`lock-${next++}`);
  }),
);
process.stdout.write(`${JSON.stringify({ session: session.id, expiresAt: session.session.expiresAt })}\n`);
