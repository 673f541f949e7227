/**
 * `leasehold tail`: follows the event stream live (needs only NATS), one
 * readable line per event, or raw JSON lines with `--json`; until SIGINT or
 * SIGTERM, or `--limit` events.
 */
import { Option, type Command } from "commander";
import { ACTOR_KINDS, type ActorKind } from "../contract/subjects.ts";
import { parseCount, parseSince } from "../tools/time.ts";
import { startTail, type TailOptions } from "../tools/tail.ts";
import { ToolUsageError } from "../tools/errors.ts";
import { ConnectFailure } from "./cli-errors.ts";
import { addToolAction } from "./options.ts";
import { terminalProgress } from "./progress.ts";

/** Flags of `tail`. */
export interface TailFlags {
  nats?: string;
  prefix: string;
  kind?: ActorKind;
  id?: string;
  since?: string;
  fromSeq?: string;
  limit?: string;
  json?: boolean;
}

/** Adds `tail` to the program. */
export function addTailCommand(program: Command): void {
  const command = program
    .command("tail")
    .description(
      "Follow the event stream live: one readable line per event (<at> #<seq> <kind> <id> <Type> field=value ...), or raw JSON with --json. Needs only NATS.",
    )
    .addOption(new Option("--kind <kind>", "only events of this kind").choices([...ACTOR_KINDS]))
    .option("--id <id>", "only events of the actor with this id (needs --kind)")
    .option(
      "--since <instant|duration>",
      "start with the events stored since an RFC 3339 instant, or a duration ago (10m, 2h, 1h30m); default: only new events",
    )
    .option("--from-seq <n>", "start at this stream sequence (1: the whole stream)")
    .option("--limit <n>", "exit after printing n events")
    .option("--json", "one JSON object per event: {seq, subject, storedAt, event} (or unparsable and payload)")
    .addHelpText("after", "\nExamples:\n  leasehold tail --kind lock --since 10m\n  leasehold tail --kind route --id checkout --json");
  addToolAction(
    command,
    (flags: TailFlags): { options: TailOptions; limit: number | undefined } => {
      if (flags.id !== undefined && flags.kind === undefined)
        throw new ToolUsageError("--id needs --kind (an id names one actor of one kind)");
      return {
        options: {
          kind: flags.kind,
          id: flags.id,
          since: flags.since === undefined ? undefined : parseSince(flags.since),
          fromSeq: flags.fromSeq === undefined ? undefined : parseCount(flags.fromSeq, "--from-seq", 1),
          json: flags.json,
        },
        limit: flags.limit === undefined ? undefined : parseCount(flags.limit, "--limit", 1),
      };
    },
    async ({ log: stream, subjects, nc, url }, { options, limit }) => {
      let printed = 0;
      let finish!: () => void;
      const done = new Promise<void>((resolve) => (finish = resolve));
      // Catching up from an old sequence can take a while: progress on a terminal until it reaches the end of the stream as it was.
      const catchUp = options.fromSeq !== undefined || options.since !== undefined;
      const { log, progress } = catchUp
        ? await terminalProgress(stream, "tail: catching up", { fromSeq: options.fromSeq })
        : { log: stream, progress: undefined };
      const following = await startTail(log, subjects, options, (line) => {
        if (limit !== undefined && printed >= limit) return;
        progress?.clear();
        console.log(line);
        printed++;
        if (printed === limit) finish();
      });
      console.error(
        `leasehold tail: following ${subjects.eventStream} (${following.filter}) from sequence ${following.fromSeq}; Ctrl-C stops`,
      );
      const onSignal = () => finish();
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      let lost: Error | undefined;
      void nc.closed().then((err) => {
        lost = err ?? new Error("closed");
        finish();
      });
      await done;
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await following.stop();
      // Not a clean end: whoever reads tail's output (a person, a pipe) must learn that the events stopped because NATS went.
      if (lost !== undefined) {
        throw new ConnectFailure(
          `lost the connection to NATS at ${url} (${lost.message}) after ${printed} events: run tail again (--from-seq <the next #seq> goes on where it stopped)`,
          { cause: lost },
        );
      }
      return 0;
    },
  );
}
