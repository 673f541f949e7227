/** `leasehold nats-config`: prints a least-privilege nats-server configuration for a prefix. */
import { InvalidArgumentError, Option, type Command } from "commander";
import { DEFAULTS } from "../config.ts";
import { isValidPrefix } from "../contract/subjects.ts";
import { natsConfig } from "../security/nats-config-text.ts";
import { natsUsers, serviceFlagsOf, type NatsLayout } from "../security/nats-permissions.ts";
import { natsServerBinary } from "../cluster/nats-server-binary.ts";
import { nextSteps, shellWord, writeConfig } from "./config-output.ts";
import { examplesHelp } from "./options.ts";
import { CliError, reportFailure } from "./cli-errors.ts";

interface NatsConfigFlags {
  prefix: string;
  accounts?: boolean;
  layout: NatsLayout;
  client: string[];
  operator: string[];
  anonymous: boolean;
  listen: string;
  storeDir: string;
  out?: string;
  force?: boolean;
}

/**
 * A commander argument parser for `--listen`: a host name or IP address and a
 * port (1 to 65535, or -1: nats-server picks a free one), nothing the
 * configuration would read otherwise.
 */
export function listenAddress(value: string): string {
  const m = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(-1|\d{1,5})$/.exec(value);
  if (m === null || (m[1] !== "-1" && (Number(m[1]) < 1 || Number(m[1]) > 65535)))
    throw new InvalidArgumentError("expected <host>:<port>, e.g. 0.0.0.0:4222 or [::]:4222 (-1: any free port)");
  return value;
}

/** Registers `nats-config` on `program`. */
export function addNatsConfigCommand(program: Command): void {
  program
    .command("nats-config")
    .description(
      "Print a nats-server configuration with least-privilege allow-lists for one prefix: the service (two users: one answers, one appends), clients " +
        "(commands, $SRV discovery, the event stream, replies only under their own inbox prefix _INBOX_<user>) and an auditor (reads the event stream). " +
        "Passwords are read by nats-server from LEASEHOLD_<USER>_PASSWORD variables.",
    )
    .addOption(new Option("--prefix <prefix>", "subject prefix the service runs with").env("LEASEHOLD_PREFIX").default(DEFAULTS.prefix))
    .option("--accounts", "print only the accounts block, to include in an existing server configuration")
    .addOption(
      new Option(
        "--layout <layout>",
        "users: one account, the service's two users, clients and the auditor; accounts: the service in an account of its own, " +
          "each client and operator in one importing it, so that the service learns who sent each request (Nats-Request-Info)",
      )
        .choices(["users", "accounts"])
        .default("users"),
    )
    .option("--client <user>", "a named client user (repeat for several)", (v: string, all: string[]) => [...all, v], [])
    .option(
      "--operator <user>",
      "a named client the service lets call operator ops (account layout; repeat for several)",
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option("--no-anonymous", "no client user for connections without credentials")
    .addOption(
      new Option("--listen <host:port>", "listen address of the whole configuration").default("127.0.0.1:4222").argParser(listenAddress),
    )
    .option("--store-dir <dir>", "JetStream store of the whole configuration", ".leasehold/jetstream")
    .option("--out <file>", "write the configuration to this file and print the commands to run next (default: stdout)")
    .option("--force", "let --out (or a redirect) replace the package's own nats.conf, which `leasehold serve` runs")
    .addHelpText(
      "after",
      examplesHelp(
        "leasehold nats-config --client alice --client bob --no-anonymous --out leasehold-nats.conf",
        "leasehold nats-config --layout accounts --client alice --operator ops --listen 0.0.0.0:4222 --out leasehold-nats.conf",
        "leasehold nats-config --prefix billing --accounts",
      ),
    )
    .action(async (flags: NatsConfigFlags) => {
      if (!isValidPrefix(flags.prefix)) {
        console.error(
          `leasehold nats-config: --prefix must be subject tokens of A-Z a-z 0-9 _ - separated by dots, got ${JSON.stringify(flags.prefix)}`,
        );
        process.exitCode = 2;
        return;
      }
      try {
        const options = {
          prefix: flags.prefix,
          layout: flags.layout,
          clients: flags.client,
          operators: flags.operator,
          // The account layout names every client: connections without credentials have no account there.
          anonymousClient: flags.anonymous && flags.layout === "users",
          accountsOnly: flags.accounts === true,
          listen: flags.listen,
          storeDir: flags.storeDir,
        };
        const serveFlags = flags.layout === "accounts" ? serviceFlagsOf({ operators: flags.operator }) : [];
        const path = writeConfig(natsConfig(options), flags, () =>
          natsConfig({ prefix: DEFAULTS.prefix, clients: [], anonymousClient: true }),
        );
        if (path === undefined) {
          if (serveFlags.length > 0) console.error(`leasehold nats-config: run the service with ${serveFlags.map(shellWord).join(" ")}`);
          return;
        }
        const natsServer = await natsServerBinary((line) => console.error(`leasehold nats-config: ${line}`)).catch(() => undefined);
        const steps = nextSteps({
          path,
          natsServer,
          listen: options.accountsOnly ? undefined : options.listen,
          prefix: options.prefix,
          defaultPrefix: DEFAULTS.prefix,
          users: natsUsers(options),
          serveFlags,
        });
        console.error(`leasehold nats-config: wrote ${path}; next, each from any folder:\n${steps.map((l) => `  ${l}`).join("\n")}`);
      } catch (e) {
        if (e instanceof CliError) process.exitCode = reportFailure("nats-config", e, false);
        else {
          console.error(`leasehold nats-config: ${(e as Error).message}`);
          process.exitCode = 2;
        }
      }
    });
}
