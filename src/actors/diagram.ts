/**
 * A Mermaid state diagram of a flat machine, generated from the machine
 * itself (its states, events, guards and targets), so the docs cannot drift
 * from the statechart the runtime runs. Transitions that stay in their state
 * are listed with their event and guard, since for a lease most of the
 * behaviour is there: a command decides without moving, its recorded event moves.
 */
import type { AnyStateMachine } from "xstate";

interface Definition {
  readonly eventType: string;
  readonly guard?: unknown;
  readonly actions: readonly unknown[];
  readonly target?: readonly { readonly key: string }[] | undefined;
}

/** The label of one transition: its event, guard and named actions. */
function label(d: Definition): string {
  const guard = typeof d.guard === "string" ? ` [${d.guard}]` : "";
  const actions = d.actions.filter((a): a is string => typeof a === "string");
  return `${d.eventType}${guard}${actions.length > 0 ? ` / ${actions.join(", ")}` : ""}`;
}

/** Every transition of a flat machine as (from state, definition), the root's under `*` (every state). */
function transitions(machine: AnyStateMachine): [string, Definition][] {
  const out: [string, Definition][] = [];
  const root = machine.root;
  for (const [key, node] of Object.entries(root.states)) {
    for (const ds of (node.transitions as Map<string, Definition[]>).values()) for (const d of ds) out.push([key, d]);
  }
  for (const ds of (root.transitions as Map<string, Definition[]>).values()) for (const d of ds) out.push(["*", d]);
  return out;
}

/** The Mermaid `stateDiagram-v2` of `machine`'s lifecycle: the transitions that move between states. */
export function stateDiagram(machine: AnyStateMachine): string {
  const root = machine.root;
  const states = Object.keys(root.states);
  const lines = ["stateDiagram-v2", `  [*] --> ${String(root.initial?.target[0]?.key ?? "?")}`];
  for (const [from, d] of transitions(machine)) {
    const to = d.target?.[0]?.key;
    if (to === undefined) continue;
    for (const source of from === "*" ? states : [from]) if (source !== to) lines.push(`  ${source} --> ${to}: ${label(d)}`);
  }
  return lines.join("\n");
}

/** A Markdown table of the transitions that stay in their state (for a lease: its decisions), in the order they are tried. */
export function decisionTable(machine: AnyStateMachine): string {
  const lines = ["| state | event | guard | emits / does |", "| --- | --- | --- | --- |"];
  for (const [from, d] of transitions(machine)) {
    const to = d.target?.[0]?.key;
    if (to !== undefined && to !== from) continue;
    const actions = d.actions.filter((a): a is string => typeof a === "string").join(", ");
    lines.push(
      `| ${from === "*" ? "every state" : from} | \`${d.eventType}\` | ${typeof d.guard === "string" ? d.guard : ""} | ${actions} |`,
    );
  }
  return lines.join("\n");
}
