/**
 * `leasehold call <kind.op> [json]`: sends one request to a running service
 * and prints the reply, for walkthroughs and operators' one-off commands.
 * Exits 1 when the service answers with a contract error.
 */
import { connect } from "@nats-io/transport-node";

/** Flags of `call`. */
export interface CallFlags {
  nats?: string;
  prefix: string;
  timeoutMs: string;
}

/** Sends one request and prints its reply (errors to stderr with their status). */
export async function callCommand(kindOp: string, body: string | undefined, flags: CallFlags): Promise<void> {
  if (!/^[a-z]+\.[a-z]+$/.test(kindOp)) {
    console.error(`leasehold call: expected <kind>.<op> such as lock.acquire, got ${JSON.stringify(kindOp)}`);
    process.exitCode = 2;
    return;
  }
  const nc = await connect({ servers: flags.nats ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222", name: "leasehold-call" });
  try {
    const reply = await nc.request(`${flags.prefix}.v1.${kindOp}`, body ?? "{}", { timeout: Number(flags.timeoutMs) });
    const status = reply.headers?.get("Nats-Service-Error-Code");
    if (status) {
      console.error(`${status} ${reply.headers?.get("Nats-Service-Error") ?? ""}`);
      console.log(reply.string());
      process.exitCode = 1;
    } else {
      console.log(reply.string());
    }
  } finally {
    await nc.close();
  }
}
