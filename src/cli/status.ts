/**
 * `leasehold status`: a live view of the running service as aligned tables:
 * proxies with load and cooldowns, hosts and the route leases on them, locks
 * with holder and time left. Exit 2 when no service answers.
 */
import type { Command } from "commander";
import { collectStatus, renderStatus } from "../tools/status.ts";
import { parseCount } from "../tools/time.ts";
import { addToolAction, examplesHelp } from "./options.ts";
import { terminalProgress } from "./progress.ts";
import { visibleJson } from "../tools/table.ts";

/** Flags of `status`. */
export interface StatusFlags {
  nats?: string;
  prefix: string;
  json?: boolean;
  allLocks?: boolean;
  timeoutMs: string;
}

/** Adds `status` to the program. */
export function addStatusCommand(program: Command): void {
  const command = program
    .command("status")
    .description(
      "Show the running service's live state: proxies (load, cooldowns), hosts and their route leases (from proxy.list, host.list, route.snapshot), " +
        "and locks with holder and time left (folded from the stream's lock events). Exit 2 when no service answers.",
    )
    .option("--json", "print one JSON object instead of tables")
    .option("--all-locks", "also list locks that are free or whose lease expired")
    .option("--timeout-ms <ms>", "how long to wait for the service's answers", "5000")
    .addHelpText(
      "after",
      examplesHelp("leasehold status", "leasehold status --all-locks --json", "leasehold status --nats nats://10.0.0.5:4222"),
    );
  addToolAction(
    command,
    (flags: StatusFlags) => parseCount(flags.timeoutMs, "--timeout-ms", 1),
    async ({ nc, log: stream, subjects }, timeoutMs, flags) => {
      const { log } = await terminalProgress(stream, "status: reading lock events");
      const status = await collectStatus(nc, log, subjects, Date.now, timeoutMs);
      console.log(
        flags.json === true ? visibleJson(JSON.stringify(status, null, 2)) : renderStatus(status, flags.allLocks === true).join("\n"),
      );
      return 0;
    },
  );
}
