/** `leasehold nats-config`: prints a least-privilege nats-server configuration for a prefix. */
import { Option, type Command } from "commander";
import { DEFAULTS } from "../config.ts";
import { isValidPrefix } from "../contract/subjects.ts";
import { natsConfig, natsUsers } from "../security/nats-permissions.ts";
import { natsServerBinary } from "../cluster/nats-server-binary.ts";
import { nextSteps, writeConfig } from "./config-output.ts";
import { CliError, reportFailure } from "./cli-errors.ts";

interface NatsConfigFlags {
  prefix: string;
  accounts?: boolean;
  client: string[];
  anonymous: boolean;
  listen: string;
  storeDir: string;
  out?: string;
  force?: boolean;
}

/** Registers `nats-config` on `program`. */
export function addNatsConfigCommand(program: Command): void {
  program
    .command("nats-config")
    .description(
      "Print a nats-server configuration with least-privilege allow-lists for one prefix: the service, clients " +
        "(commands, $SRV discovery, the event stream, replies only under their own inbox prefix _INBOX_<user>) and an auditor (reads the event stream). " +
        "Passwords are read by nats-server from LEASEHOLD_<USER>_PASSWORD variables.",
    )
    .addOption(new Option("--prefix <prefix>", "subject prefix the service runs with").env("LEASEHOLD_PREFIX").default(DEFAULTS.prefix))
    .option("--accounts", "print only the accounts block, to include in an existing server configuration")
    .option("--client <user>", "a named client user (repeat for several)", (v: string, all: string[]) => [...all, v], [])
    .option("--no-anonymous", "no client user for connections without credentials")
    .option("--listen <host:port>", "listen address of the whole configuration", "127.0.0.1:4222")
    .option("--store-dir <dir>", "JetStream store of the whole configuration", ".leasehold/jetstream")
    .option("--out <file>", "write the configuration to this file and print the commands to run next (default: stdout)")
    .option("--force", "let --out (or a redirect) replace the package's own nats.conf, which `leasehold serve` runs")
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
          clients: flags.client,
          anonymousClient: flags.anonymous,
          accountsOnly: flags.accounts === true,
          listen: flags.listen,
          storeDir: flags.storeDir,
        };
        const text = natsConfig(options);
        const path = writeConfig(text, flags, () => natsConfig({ prefix: DEFAULTS.prefix, clients: [], anonymousClient: true }));
        if (path === undefined) return;
        const natsServer = await natsServerBinary((line) => console.error(`leasehold nats-config: ${line}`)).catch(() => undefined);
        const steps = nextSteps({
          path,
          natsServer,
          listen: options.accountsOnly ? undefined : options.listen,
          prefix: options.prefix,
          defaultPrefix: DEFAULTS.prefix,
          users: natsUsers(options),
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
