/** The `leasehold` command line. */
import { Command, Option, type CommanderError } from "commander";
import { VERSION } from "../version.ts";
import { EXIT, oneLine } from "./cli-errors.ts";
import {
  addConnectionOptions,
  addServiceOptions,
  CONNECTION_HELP,
  examplesHelp,
  listenOrOff,
  hostNames,
  runReported,
  wholeNumber,
} from "./options.ts";
import type { ServeFlags } from "./serve.ts";
import { addAppendOptions } from "./connection-options.ts";
import { DEFAULT_HEAP_GROWTH_PERCENT } from "./heap-growth.ts";
import { DEFAULT_IDLE_COLLECT_MS } from "./idle-collect.ts";
import { callCommand, type CallFlags } from "./call.ts";
import { opsHelp } from "./ops.ts";
import { addReplayCommand } from "./replay.ts";
import { addAuditCommand } from "./audit.ts";
import { addTailCommand } from "./tail.ts";
import { addStatusCommand } from "./status.ts";
import { addNatsConfigCommand } from "./nats-config.ts";
import { addDevClusterCommand } from "./dev-cluster.ts";
import { addHostLoadCommand } from "./host-load.ts";

const program = new Command()
  .name("leasehold")
  .description("Event-sourced lease service on NATS JetStream: proxy leases, route placement and fenced locks.")
  .version(VERSION)
  // A usage error is one line naming the flag, with where the flags are listed (each command's own: usageLine below).
  .configureOutput({ outputError: (message, write) => write(usageLine(undefined, message)) })
  // Usage errors exit 2 (commander's default is 1, which audit and call use for another meaning); help and version exit 0.
  .exitOverride((e: CommanderError) => {
    // Help shown for want of a command (none given, or `help <unknown>`) carries exit code 1: that is a usage error too.
    const ok = e.code === "commander.helpDisplayed" || e.code === "commander.version" || (e.code === "commander.help" && e.exitCode === 0);
    process.exit(ok ? EXIT.ok : EXIT.usage);
  })
  .addHelpText(
    "after",
    "\nStart with: npx leasehold serve   (its own nats-server on 127.0.0.1:4222, data in ./.leasehold)\n" +
      `Exit codes: ${EXIT.ok} ok, ${EXIT.refused} audit found violations or call was refused, ${EXIT.usage} usage or connection error.`,
  );

const serveCommand = program
  .command("serve")
  .description(
    "Run the service. Answers <prefix>.v1.<kind>.<op> requests in the 'leasehold' queue group (run several for scale-out) " +
      "and keeps every lease in the <PREFIX>_EVENTS stream. Ready when $SRV.PING.leasehold answers; SIGTERM/SIGINT stop it cleanly.",
  );
addConnectionOptions(serveCommand, "starts its own nats-server (--nats-port, --data-dir)");
addAppendOptions(serveCommand);
addServiceOptions(serveCommand);
serveCommand.addOption(
  new Option(
    "--http <host:port>",
    "serve /healthz, /readyz, /metrics and the live dashboard at / here ('off': none; default off, 127.0.0.1:7420 with the local nats-server)",
  )
    .env("LEASEHOLD_HTTP")
    .argParser(listenOrOff),
);
serveCommand.addOption(
  new Option(
    "--http-allowed-hosts <names>",
    "host names the dashboard answers to besides IP addresses and localhost, comma-separated (a page elsewhere that points a name at this address may not read it)",
  )
    .env("LEASEHOLD_HTTP_ALLOWED_HOSTS")
    .argParser(hostNames),
);
serveCommand.addOption(
  new Option(
    "--http-streams-per-peer <n>",
    "live dashboards one address may keep open at once, of the 64 (behind a reverse proxy, all browsers share its address)",
  )
    .env("LEASEHOLD_HTTP_STREAMS_PER_PEER")
    .default(8)
    .argParser(wholeNumber(1, 64)),
);
serveCommand
  .addOption(
    new Option("--data-dir <dir>", "where the local nats-server (started without --nats) keeps its data and the service password")
      .env("LEASEHOLD_DATA_DIR")
      .default("./.leasehold"),
  )
  .addOption(
    new Option("--nats-port <port>", "port of the local nats-server on 127.0.0.1 (without --nats)")
      .env("LEASEHOLD_NATS_PORT")
      .default(4222)
      .argParser(wholeNumber(1, 65535)),
  )
  .addOption(
    new Option(
      "--heap-growth-percent <percent>",
      "once started, let V8's heap grow only this far (percent) past its live size before the next full collection: less memory after a burst, more CPU (default 0: V8's own policy, up to 4x; docs/operations.md, Memory)",
    )
      .env("LEASEHOLD_HEAP_GROWTH_PERCENT")
      .default(DEFAULT_HEAP_GROWTH_PERCENT)
      .argParser(wholeNumber(0)),
  )
  .addOption(
    new Option(
      "--idle-collect-ms <ms>",
      "after this long with the service idle and its heap grown by 32 MiB, collect the heap and return the spare memory to the system (0: never; docs/operations.md, Memory)",
    )
      .env("LEASEHOLD_IDLE_COLLECT_MS")
      .default(DEFAULT_IDLE_COLLECT_MS)
      .argParser(wholeNumber(0)),
  )
  .addOption(
    new Option("--log-format <format>", "json: one JSON object per line on stdout; text: short lines on stderr; auto: text on a terminal")
      .env("LEASEHOLD_LOG_FORMAT")
      .choices(["auto", "json", "text"])
      .default("auto"),
  )
  .addHelpText(
    "after",
    examplesHelp(
      "leasehold serve                       # its own nats-server on 127.0.0.1:4222, data in ./.leasehold, dashboard on 127.0.0.1:7420",
      "leasehold serve --nats nats://10.0.0.5:4222,nats://10.0.0.6:4222 --creds ~/leasehold.creds --http 0.0.0.0:7420",
      "leasehold serve --nats-port 4333 --data-dir /var/lib/leasehold --lock-ttl-ms 10000 --max-ttl-ms 60000",
    ),
  )
  .addHelpText("after", `\nExit codes: ${EXIT.ok} stopped by a signal, ${EXIT.usage} usage or connection error.`);
// Loaded when used: the service's modules take most of a start-up, which call and the tools do not need.
serveCommand.action(async (flags: ServeFlags) =>
  (await import("./serve.ts")).serve(flags, serveCommand.getOptionValueSource("logLevel") !== "default"),
);

const callCmd = program
  .command("call")
  .description('Send one request to a running service and print the reply, e.g. call lock.acquire \'{"name":"db","owner":"me"}\'.')
  .argument("<kind.op>", "the command, e.g. lock.acquire, lock.get, proxy.list")
  .argument("[json]", "the request body (default {})")
  .addOption(new Option("--timeout-ms <ms>", "how long to wait for the reply").default(5000).argParser(wholeNumber(1)))
  .option("--pretty", "indent the JSON reply");
addConnectionOptions(callCmd);
callCmd.addHelpText(
  "after",
  examplesHelp(
    `leasehold call lock.acquire '{"name":"reports/nightly","owner":"worker-a","ttlMs":15000}'`,
    "leasehold call --pretty proxy.list",
    `leasehold call --nats nats://10.0.0.5:4222 --creds ~/alice.creds route.get '{"route":"chat"}'`,
  ),
);
callCmd.addHelpText("after", `\nOps (request bodies; ? marks an optional field):\n${opsHelp()}\n${CONNECTION_HELP}`);
callCmd.action((kindOp: string, body: string | undefined, flags: CallFlags) =>
  runReported("call", flags, () => callCommand(kindOp, body, flags)),
);

addReplayCommand(program);
addAuditCommand(program);
addTailCommand(program);
addStatusCommand(program);
addNatsConfigCommand(program);
addDevClusterCommand(program);
addHostLoadCommand(program);

for (const command of program.commands)
  command.configureOutput({ outputError: (message, write) => write(usageLine(command.name(), message)) });

/** Commander's usage error as `leasehold <command>: <what>`, the form of every other failure, with the help that lists the flags. */
function usageLine(command: string | undefined, message: string): string {
  const what = oneLine(message).replace(/^error: /, "");
  return command === undefined
    ? `leasehold: ${what} (leasehold --help lists the commands)\n`
    : `leasehold ${command}: ${what} (leasehold ${command} --help lists its flags)\n`;
}

await program.parseAsync(process.argv);
