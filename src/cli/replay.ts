/**
 * `leasehold replay`: folds the event stream (needs only NATS, not a running
 * service) up to `--at <instant>` or `--seq <n>` and prints every actor's
 * state then, as tables or (`--json`) in the shapes the service answers.
 */
import { Option, type Command } from "commander";
import { type StoredMessage } from "../events/event-log.ts";
import { ACTOR_KINDS, type ActorKind } from "../contract/subjects.ts";
import { earlier, parseBounds, parseCount, parseInstant } from "../tools/time.ts";
import { natsSource } from "../tools/stream-reader.ts";
import { renderReplay } from "../tools/replay-render.ts";
import { replayInWorker } from "../tools/worker-read.ts";
import { replaySource, type ReplayRange, type ReplayView } from "../tools/replay.ts";
import { addToolAction } from "./options.ts";
import { terminalReadProgress } from "./progress.ts";
import { TOOL_THREADS_HELP, toolsOnTwoThreads, toolThreadsSetting } from "./tool-threads.ts";
import { visibleJson } from "../tools/table.ts";

/** Flags of `replay`. */
export interface ReplayFlags {
  nats?: string;
  prefix: string;
  at?: string;
  seq?: string;
  since?: string;
  until?: string;
  kind?: ActorKind;
  id?: string;
  json?: boolean;
}

/** Adds `replay` to the program. */
export function addReplayCommand(program: Command): void {
  const command = program
    .command("replay")
    .description(
      "Fold the event stream up to an instant or a sequence and print the state then: proxies, proxy leases, hosts, routes and locks " +
        "(expiry evaluated at that instant). Needs only NATS: works with the service stopped.",
    )
    .option("--at <instant>", "show the state at this RFC 3339 instant: every event stored at or before it, expiry as of it (default: now)")
    .option(
      "--seq <n>",
      "fold up to and including stream sequence n (with --at: whichever comes first); without --at the state is shown as of that message's time",
    )
    .option("--until <seq|instant>", "the same as --seq (a whole number) or --at (an RFC 3339 instant); with both, whichever comes first")
    .option(
      "--since <seq|instant>",
      "show only the actors with an event from this stream sequence, or stored at or after this instant, on (the state is still folded from the start)",
    )
    .addOption(new Option("--kind <kind>", "show only this kind").choices([...ACTOR_KINDS]))
    .option("--id <id>", "show only the actor(s) with this id (a proxy, host, route or lock name)")
    .option(
      "--json",
      "print one JSON object (proxies as proxy.list, hosts as host.list, routes as route.get, locks as lock.get answer them)",
    )
    .addHelpText(
      "after",
      "\nExamples:\n  leasehold replay --at 2026-11-30T19:14:10Z\n  leasehold replay --since 2026-11-30T19:00:00Z --until 2026-11-30T19:14:10Z\n  leasehold replay --seq 120 --kind lock --id reports/nightly --json",
    )
    .addHelpText("after", TOOL_THREADS_HELP);
  addToolAction(
    command,
    (flags: ReplayFlags): ReplayRange => {
      toolThreadsSetting(); // a bad LEASEHOLD_TOOLS_THREADS is a usage error before connecting
      const bounds = parseBounds(flags.since, flags.until);
      return {
        toTime: earlier(flags.at === undefined ? undefined : parseInstant(flags.at, "--at"), bounds.untilTime),
        toSeq: earlier(flags.seq === undefined ? undefined : parseCount(flags.seq, "--seq"), bounds.untilSeq),
        sinceSeq: bounds.sinceSeq,
        sinceTime: bounds.sinceTime,
      };
    },
    async ({ nc, subjects }, range, flags) => {
      const source = natsSource(nc, subjects);
      const last = await source.lastSeq();
      const total = earlier(range.toSeq, last) ?? last;
      const progress = terminalReadProgress("replay", total);
      let view: ReplayView;
      try {
        const onMessage = progress === undefined ? undefined : (m: StoredMessage) => progress.seen(m.seq);
        // On two threads the fold runs on a worker while this one reads (src/tools/worker-read.ts).
        view = await (toolsOnTwoThreads(toolThreadsSetting(), total) ? replayInWorker : replaySource)(
          source,
          subjects,
          range,
          { kind: flags.kind, id: flags.id },
          onMessage,
        );
      } finally {
        progress?.done();
      }
      console.log(flags.json === true ? visibleJson(JSON.stringify(view, null, 2)) : renderReplay(view, subjects.eventStream).join("\n"));
      return 0;
    },
  );
}
