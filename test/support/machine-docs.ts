/** The generated parts of the docs that come from the machines (scripts/diagrams.ts writes them; a unit test checks them). */
import { format, resolveConfig } from "prettier";
import { decisionTable, stateDiagram } from "../../src/actors/diagram.ts";
import { lockMachine } from "../../src/lock/logic.ts";

/** The lock machine's section: its lifecycle diagram and its decisions, in the order they are tried. */
export function lockMachineSection(): string {
  // The diagram does not depend on the settings (they are read by guards only).
  const machine = lockMachine({ lockTtlMs: 30_000, maxTtlMs: 30_000 });
  return ["```mermaid", stateDiagram(machine), "```", "", decisionTable(machine)].join("\n");
}

/** `text` with what stands between the `generated:<name>` markers replaced by `content`. */
export function replaceGenerated(text: string, name: string, content: string): string {
  const open = `<!-- generated:${name} (npm run diagrams) -->`;
  const close = `<!-- /generated:${name} -->`;
  const start = text.indexOf(open);
  const end = text.indexOf(close);
  if (start < 0 || end < start) throw new Error(`no ${open} ... ${close} markers`);
  return `${text.slice(0, start + open.length)}\n\n${content}\n\n${text.slice(end)}`;
}

/** docs/locks.md as it should be: its generated section rewritten, then formatted as the repository formats Markdown. */
export async function lockDocAsGenerated(doc: string, path: string): Promise<string> {
  const options = (await resolveConfig(path)) ?? {};
  return format(replaceGenerated(doc, "lock-machine", lockMachineSection()), { ...options, filepath: path });
}
