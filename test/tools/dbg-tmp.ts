import { simulateWorkload } from "./support/workload.ts";
import { auditStream } from "../../src/tools/index.ts";
const sim = await simulateWorkload({ events: 20000 });
const dec = new TextDecoder();
const viol: any[] = [];
await auditStream(sim.log.readStream(), sim.subjects, { cooldownMs: sim.config.cooldownMs, maxTtlMs: sim.config.maxTtlMs, onViolation: (v) => viol.push(v) });
console.log(viol);
const v = viol[0];
if (v) for (const m of sim.log.messages) {
  if (m.seq > v.seq) break;
  if (m.subject !== v.subject) continue;
  const e = JSON.parse(dec.decode(m.payload));
  if (Date.parse(e.at) < Date.parse(v.at) - 25000) continue;
  console.log(m.seq, e.at, e.type, e.requestId, m.msgId, JSON.stringify(e.data));
}
