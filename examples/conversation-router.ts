/**
 * A router that places conversations on hosts.
 *
 * Each conversation is a key (route = the tenant, fp = the conversation,
 * model) placed with `route.acquire`: new conversations go to the least
 * loaded healthy host, later turns of a conversation stick to its host, and a
 * conversation follows its tenant's own host when it has one. A health
 * checker then reports a host down and another draining through durable
 * commands (kept in JetStream even if no service runs at that moment):
 * conversations on the dead host move, the draining host keeps what it has
 * but gets nothing new. Finally an operator pins a tenant to one host.
 *
 * It tells the same story on a stream that has seen other work: its hosts
 * are its own (demo-gpu-*), and it starts by clearing them and its tenants.
 *
 *   npx leasehold serve                        # in another terminal, in the clone
 *   npx tsx examples/conversation-router.ts    # NATS_URL, LEASEHOLD_PREFIX optional
 */
import { connect } from "@nats-io/transport-node";
import { LeaseholdClient } from "../src/index.ts";

const HOSTS = ["demo-gpu-1", "demo-gpu-2", "demo-gpu-3"];
const TENANTS = ["acme", "globex", "initech"];

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222", name: "conversation-router" });
const client = new LeaseholdClient(nc, { prefix: process.env.LEASEHOLD_PREFIX ?? "leasehold" });

/** Places one turn of a conversation and prints where it went. */
async function place(tenant: string, conversation: string, model: string): Promise<string> {
  const { host, reused } = await client.route.acquire({ route: tenant, fp: conversation, model, candidates: HOSTS });
  const who = conversation === "" ? `${tenant} (tenant default)` : `${tenant}/${conversation}`;
  console.log(`  ${who.padEnd(26)} ${model.padEnd(8)} -> ${host}${reused ? " (reused)" : " (new)"}`);
  return host;
}

try {
  // A clean slate for the demo: every host up, no pins, and no leases on its hosts (from an earlier run, or any route).
  for (const host of HOSTS) await client.host.set({ host, healthy: true, draining: false });
  const onOurHosts = (await client.route.snapshot()).leases.filter((l) => HOSTS.includes(l.host)).map((l) => l.route);
  for (const route of new Set([...TENANTS, ...onOurHosts])) {
    await client.route.unpin({ route });
    await client.route.release({ route });
  }

  console.log("placing conversations:");
  await place("acme", "", "llama");
  await place("acme", "chat-101", "llama");
  await place("globex", "chat-201", "llama");
  await place("initech", "chat-301", "mistral");
  await place("acme", "chat-102", "mistral");
  await place("globex", "chat-201", "llama");

  console.log("health checker: demo-gpu-1 is down, demo-gpu-2 is draining (durable commands)");
  const down = await client.durable.host.set({ host: "demo-gpu-1", healthy: false }, { awaitReply: true });
  const drain = await client.durable.host.set({ host: "demo-gpu-2", healthy: true, draining: true }, { awaitReply: true });
  console.log(
    `  stored as ${down.stream} #${down.seq} and #${drain.seq}, carried out: ${JSON.stringify(down.reply)} ${JSON.stringify(drain.reply)}`,
  );
  await place("acme", "", "llama");
  await place("acme", "chat-101", "llama");
  await place("globex", "chat-201", "llama");
  await place("globex", "chat-202", "llama");

  console.log("operator: pin initech to demo-gpu-2 (its leases elsewhere are dropped)");
  await client.route.pin({ route: "initech", host: "demo-gpu-2" });
  await place("initech", "chat-301", "mistral");
  const initech = await client.route.get({ route: "initech" });
  console.log(`  initech pinned to ${initech.pinned}, leases: ${initech.leases.map((l) => `${l.fp}@${l.host}`).join(", ")}`);

  console.log("hosts:");
  for (const h of (await client.host.list()).hosts.filter((x) => HOSTS.includes(x.host))) {
    console.log(`  ${h.host}: ${h.healthy ? "healthy" : "DOWN"}${h.draining ? ", draining" : ""}, ${h.active} active`);
  }
  const ours = (await client.route.snapshot()).leases.filter((l) => TENANTS.includes(l.route));
  console.log(`${ours.length} conversations placed: ${ours.map((l) => `${l.route}/${l.fp || "-"}@${l.host}`).join(" ")}`);
} finally {
  await nc.close();
}
