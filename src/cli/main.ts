/** The `leasehold` command line. */
import { Command, Option } from "commander";
import { VERSION } from "../version.ts";
import { addConnectionOptions, addServiceOptions } from "./options.ts";
import { serve, type ServeFlags } from "./serve.ts";
import { callCommand, type CallFlags } from "./call.ts";
import { addReplayCommand } from "./replay.ts";
import { addAuditCommand } from "./audit.ts";
import { addTailCommand } from "./tail.ts";
import { addStatusCommand } from "./status.ts";
import { addDevClusterCommand } from "./dev-cluster.ts";

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
serveCommand.addOption(
  new Option("--http <host:port>", "serve /healthz, /readyz, /metrics and the live dashboard at / here ('off': none; default off, 127.0.0.1:7420 with the local nats-server)").env("LEASEHOLD_HTTP"),
);
serveCommand.action((flags: ServeFlags) => serve(flags));

const callCmd = program
  .command("call")
  .description("Send one request to a running service and print the reply, e.g. call lock.acquire '{\"name\":\"db\",\"owner\":\"me\"}'.")
  .argument("<kind.op>", "the command, e.g. lock.acquire, lock.get, proxy.list")
  .argument("[json]", "the request body (default {})")
  .option("--timeout-ms <ms>", "how long to wait for the reply", "5000");
addConnectionOptions(callCmd);
callCmd.action((kindOp: string, body: string | undefined, flags: CallFlags) => callCommand(kindOp, body, flags));

addReplayCommand(program);
addAuditCommand(program);
addTailCommand(program);
addStatusCommand(program);
addDevClusterCommand(program);

await program.parseAsync(process.argv);
