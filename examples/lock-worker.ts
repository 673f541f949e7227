/**
 * A worker that takes a lock and does fenced work.
 *
 * worker-a keeps the lock `reports/nightly` with a lock keeper (renewed every
 * ttl / 3) and writes each step to a store that remembers the highest fencing
 * token (the lock's generation) it has seen and refuses lower ones. After
 * six steps an operator resets the lock and worker-b takes it: worker-a's
 * write that was already under way is refused by the store, and its keeper
 * reports the loss at its next renew (signal aborted, onLost called).
 *
 *   npx leasehold serve                  # in another terminal
 *   npx tsx examples/lock-worker.ts      # NATS_URL, LEASEHOLD_PREFIX optional
 */
import { connect } from "@nats-io/transport-node";
import { LeaseholdClient } from "../src/index.ts";

const LOCK = "reports/nightly";

/** Storage that accepts a write only with a fencing token at least as high as any it has seen. */
class FencedStore {
  private highest = 0;
  readonly rows: string[] = [];

  write(who: string, token: number, row: string): void {
    const ok = token >= this.highest;
    if (ok) {
      this.highest = token;
      this.rows.push(row);
    }
    console.log(`${who}: write "${row}" with token ${token} -> ${ok ? "accepted" : "REFUSED, stale token"}`);
  }
}

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222", name: "lock-worker" });
const client = new LeaseholdClient(nc, { prefix: process.env.LEASEHOLD_PREFIX ?? "leasehold" });
const store = new FencedStore();
try {
  // Start clean even if an earlier run was interrupted while holding the lock.
  await client.lock.reset({ name: LOCK });

  let stolenAt = 0;
  const a = await client.lock.keep({
    name: LOCK,
    owner: "worker-a",
    ttlMs: 3000,
    onLost: (e) => console.log(`worker-a: onLost after ${Date.now() - stolenAt} ms: ${e.reason} (${e.message})`),
  });
  const heldSince = Date.now();
  console.log(`worker-a: holds ${LOCK} with generation ${a.generation}; renews every ${a.renewEveryMs} ms`);
  for (let step = 1; step <= 6; step++) {
    await new Promise((resolve) => setTimeout(resolve, 550));
    store.write("worker-a", a.generation, `a: step ${step}`);
  }
  console.log(`worker-a: still holds it after ${Date.now() - heldSince} ms, past its ${a.lease.ttlMs} ms TTL: renewed in the background`);

  // An operator forces the lock free (worker-a looked stuck), and worker-b takes it at once.
  await client.lock.reset({ name: LOCK });
  const b = await client.lock.keep({ name: LOCK, owner: "worker-b", ttlMs: 3000 });
  stolenAt = Date.now();
  console.log(`operator: reset ${LOCK}; worker-b holds it with generation ${b.generation}`);
  store.write("worker-b", b.generation, "b: step 1");

  // worker-a's seventh step was already under way: the store refuses its old token.
  store.write("worker-a", a.generation, "a: step 7");
  // Its keeper finds out at the next renew, within one renew period.
  await new Promise((resolve) => a.signal.addEventListener("abort", resolve, { once: true }));
  console.log(`worker-a: signal aborted (${(a.signal.reason as Error).name}); it stops working`);
  await a.close(); // nothing to release: the lock is worker-b's

  store.write("worker-b", b.generation, "b: step 2");
  await b.close();
  console.log(`worker-b: released; lock now ${JSON.stringify((await client.lock.get({ name: LOCK })).lease)}`);
  console.log(`store: ${JSON.stringify(store.rows)}`);
} finally {
  await nc.close();
}
