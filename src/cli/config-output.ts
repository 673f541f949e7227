/**
 * Where `leasehold nats-config` puts what it generates, and what it tells the
 * user to run next. The package's own `nats.conf` is what `leasehold serve`
 * runs, so it is never replaced by accident: `--out` refuses it without
 * `--force`, and a shell redirect onto it (which truncated it before the
 * command ran) is undone and refused.
 */
import { fstatSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PROJECT_ROOT } from "../cluster/nats-server-binary.ts";
import { UsageError } from "./cli-errors.ts";

/** The configuration `leasehold serve` runs its own nats-server with. */
export const SHIPPED_CONFIG = join(PROJECT_ROOT, "nats.conf");

/** Where the generated text goes. */
export interface ConfigTarget {
  /** `--out <file>`; stdout when absent. */
  readonly out?: string | undefined;
  /** `--force`: the shipped nats.conf may be replaced. */
  readonly force?: boolean | undefined;
}

/**
 * Writes `text` to `target.out` (or stdout) and returns the absolute path
 * written, or undefined for stdout. `shipped` is the shipped file's own
 * text, put back when a redirect had emptied it.
 */
export function writeConfig(text: string, target: ConfigTarget, shipped: () => string): string | undefined {
  if (target.out === undefined) {
    if (!target.force && isShipped(fstatSync(1))) {
      writeFileSync(SHIPPED_CONFIG, shipped());
      throw new UsageError(
        `stdout is the shipped ${SHIPPED_CONFIG}, which \`leasehold serve\` runs: it is left as it was; write elsewhere with --out <file> (replace it only with --force)`,
      );
    }
    process.stdout.write(text);
    return undefined;
  }
  const path = resolve(target.out);
  if (!target.force && isShipped(statIfAny(path))) {
    throw new UsageError(
      `--out ${target.out} is the shipped nats.conf, which \`leasehold serve\` runs: write elsewhere (replace it only with --force)`,
    );
  }
  try {
    writeFileSync(path, text);
  } catch (e) {
    throw new UsageError(`--out: cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
  return path;
}

/** Whether `stats` describe the shipped nats.conf itself (the same file, whatever the path that reached it). */
function isShipped(stats: { dev: number; ino: number } | undefined): boolean {
  if (stats === undefined) return false;
  const shipped = statIfAny(SHIPPED_CONFIG);
  return shipped !== undefined && shipped.dev === stats.dev && shipped.ino === stats.ino;
}

function statIfAny(path: string): { dev: number; ino: number } | undefined {
  try {
    return statSync(realpathSync(path));
  } catch {
    return undefined;
  }
}

/** What the user runs after the file is written: its users' passwords, the server, the service and a client. */
export interface NextStepsInput {
  /** The file written. */
  readonly path: string;
  /** The nats-server binary, or undefined when none could be found. */
  readonly natsServer: string | undefined;
  /** The whole configuration's `listen` (host:port), or undefined for an accounts block. */
  readonly listen: string | undefined;
  readonly prefix: string;
  readonly defaultPrefix: string;
  /** Every user with a password: name, role and the variable nats-server reads it from. */
  readonly users: readonly { user: string; role: string; passwordEnv?: string | undefined }[];
  /** Flags the service needs with this layout (the account layout's). */
  readonly serveFlags?: readonly string[];
}

/** The `leasehold` command by its absolute path: runs from any folder, whether or not `leasehold` is on PATH. */
export function leaseholdByPath(): string {
  return `node ${shellWord(join(PROJECT_ROOT, "bin/leasehold.js"))}`;
}

/** The exact commands to run next, as lines (paths absolute, so they work from any folder). */
export function nextSteps(input: NextStepsInput): string[] {
  const bin = leaseholdByPath();
  const server =
    input.natsServer === undefined ? `"$(bash ${shellWord(join(PROJECT_ROOT, "scripts/nats-server.sh"))})"` : shellWord(input.natsServer);
  const withPasswords = input.users.filter((u) => u.passwordEnv !== undefined);
  const prefix = input.prefix === input.defaultPrefix ? "" : ` --prefix ${input.prefix}`;
  // nats-server reads each variable as a configuration value: one starting with a digit would not parse, hence "pw".
  const lines = [
    `export ${withPasswords.map((u) => `${u.passwordEnv}="pw$(node -p 'crypto.randomUUID().replaceAll("-", "")')"`).join(" ")}`,
  ];
  if (input.listen === undefined) {
    lines.push(`# include ${input.path} in your server's configuration, reload it, then:`);
  } else {
    lines.push(`${server} -c ${shellWord(input.path)} &`);
  }
  const url = `nats://${connectHost(input.listen)}`;
  const as = (user: { user: string; passwordEnv?: string | undefined }) =>
    `LEASEHOLD_USER=${user.user} LEASEHOLD_PASSWORD="$${user.passwordEnv}"`;
  const service = withPasswords.find((u) => u.role === "service");
  // serve reads the appending connection's password from LEASEHOLD_APPEND_PASSWORD (the default prefix's own variable).
  const appender = withPasswords.find((u) => u.role === "appender");
  const appendPassword =
    appender === undefined || appender.passwordEnv === "LEASEHOLD_APPEND_PASSWORD"
      ? ""
      : ` LEASEHOLD_APPEND_PASSWORD="$${appender.passwordEnv}"`;
  const append = appender === undefined ? "" : ` LEASEHOLD_APPEND_USER=${appender.user}${appendPassword}`;
  const extra = (input.serveFlags ?? []).map((f) => ` ${shellWord(f)}`).join("");
  if (service !== undefined) lines.push(`${as(service)}${append} ${bin} serve --nats ${url}${prefix}${extra} &`);
  const client = withPasswords.find((u) => u.role === "client");
  if (client !== undefined)
    lines.push(`${as(client)} ${bin} call --nats ${url}${prefix} lock.acquire '{"name":"demo","owner":"${client.user}"}'`);
  return lines;
}

/** Where a client on this machine reaches a server listening on `listen` (any address: loopback). */
function connectHost(listen: string | undefined): string {
  if (listen === undefined) return "<your-server>:4222";
  const colon = listen.lastIndexOf(":");
  const host = colon === -1 ? listen : listen.slice(0, colon);
  const port = colon === -1 ? "4222" : listen.slice(colon + 1);
  const reachable = host === "" || host === "0.0.0.0" || host === "::" || host === "[::]" ? "127.0.0.1" : host;
  return `${reachable}:${port}`;
}

/** `word` quoted for a POSIX shell when it needs it. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
