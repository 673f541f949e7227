/** `leasehold` command line: `serve` now; `replay`, `audit`, `tail` and `status` join it. */
import { Command } from "commander";
import { VERSION } from "../version.ts";
import { addConnectionOptions, addServiceOptions } from "./options.ts";
import { serve, type ServeFlags } from "./serve.ts";

const program = new Command()
  .name("leasehold")
  .description("Event-sourced lease service on NATS JetStream: proxy leases, route placement and fenced locks.")
  .version(VERSION)
  .showHelpAfterError();

const serveCommand = program
  .command("serve")
  .description(
    "Run the service. Answers <prefix>.v1.<kind>.<op> requests in the 'leasehold' queue group (run several for scale-out) " +
      "and keeps every lease in the <PREFIX>_EVENTS stream. Ready when $SRV.PING.leasehold answers; SIGTERM/SIGINT stop it cleanly.",
  );
addConnectionOptions(serveCommand);
addServiceOptions(serveCommand);
serveCommand.action((flags: ServeFlags) => serve(flags));

await program.parseAsync(process.argv);
