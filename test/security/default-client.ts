/**
 * A client of a `leasehold serve` on the default prefix, as the process
 * tests of the trust boundary talk to it: a request, and a durable command
 * with its answer on `Leasehold-Reply-To`.
 */
import { createInbox, headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The answer to `body` on `leasehold.v1.<op>`. */
export async function ask(nc: NatsConnection, op: string, body: unknown): Promise<Record<string, unknown>> {
  return (await nc.request(`leasehold.v1.${op}`, encode(body), { timeout: 10_000 })).json<Record<string, unknown>>();
}

/** Publishes a durable command on `leasehold.cmd.<op>` and returns its answer on `Leasehold-Reply-To`. */
export async function durable(nc: NatsConnection, op: string, body: unknown): Promise<Record<string, unknown>> {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox, { max: 1, timeout: 10_000 });
  const h = natsHeaders();
  h.set("Leasehold-Reply-To", inbox);
  nc.publish(`leasehold.cmd.${op}`, encode(body), { headers: h });
  for await (const m of sub) return m.json<Record<string, unknown>>();
  throw new Error("no answer");
}
