/**
 * How every `leasehold` command reaches NATS: the `--nats` server list and the
 * credential flags (`--creds`, `--user`/`--password`, `--token`, `--tls-ca`,
 * `--tls-cert`, `--tls-key`) and the reply prefix (`--inbox-prefix`), each
 * also read from `LEASEHOLD_<FLAG>`, turned into nats.js connection options; and one `connect` that turns a failure
 * into a one-line {@link ConnectFailure}.
 */
import { readFileSync } from "node:fs";
import { Option, type Command } from "commander";
import { connect } from "@nats-io/transport-node";
import { AuthorizationError, credsAuthenticator, type ConnectionOptions, type NatsConnection } from "@nats-io/nats-core";
import { isValidPrefix } from "../contract/subjects.ts";
import { inboxPrefixOf } from "../security/nats-permissions.ts";
import { ConnectFailure, UsageError } from "./cli-errors.ts";

/** The address of the nats-server `serve` starts when no NATS URL is given (with the default `--nats-port`). */
export const LOCAL_NATS_URL = "nats://127.0.0.1:4222";

/** The connection flags as commander hands them over (values from flags or `LEASEHOLD_*`). */
export interface ConnectionFlags {
  readonly nats?: string | undefined;
  readonly creds?: string | undefined;
  readonly user?: string | undefined;
  readonly password?: string | undefined;
  readonly token?: string | undefined;
  readonly tlsCa?: string | undefined;
  readonly tlsCert?: string | undefined;
  readonly tlsKey?: string | undefined;
  readonly inboxPrefix?: string | undefined;
}

/** Where to connect and with what credentials, ready for nats.js. */
export interface NatsTarget {
  /** The servers to try, as given (`--nats a,b,c`). */
  readonly servers: string[];
  /** The servers as one string for messages. */
  readonly label: string;
  /** Credentials and TLS settings for `connect`. */
  readonly auth: Pick<ConnectionOptions, "authenticator" | "user" | "pass" | "token" | "tls">;
  /** Whether any credential or TLS flag was given. */
  readonly hasCredentials: boolean;
  /**
   * Where replies arrive: `--inbox-prefix`, else `_INBOX_<user>` for `--user`
   * (the convention `leasehold nats-config` writes), else nats.js's `_INBOX`.
   */
  readonly inboxPrefix?: string;
}

/** Adds flags, each also read from its environment variable: `[spec, description, variable]`. */
function addEnvFlags(command: Command, flags: readonly (readonly [string, string, string])[]): Command {
  for (const [spec, description, env] of flags) command.addOption(new Option(spec, description).env(env));
  return command;
}

/**
 * Adds the NATS server and credential flags shared by `serve` and every tool;
 * `withoutNats` says what the command does without `--nats`.
 */
export function addNatsOptions(command: Command, withoutNats = `connects to ${LOCAL_NATS_URL}`): Command {
  return addEnvFlags(command, [
    [
      "--nats <urls>",
      `NATS server URL, or several separated by commas (nats://a:4222,nats://b:4222); also NATS_URL. Without it ${command.name()} ${withoutNats}`,
      "LEASEHOLD_NATS",
    ],
    ["--creds <file>", "NATS credentials file (user JWT and NKey seed)", "LEASEHOLD_CREDS"],
    ["--user <name>", "NATS user name (with --password)", "LEASEHOLD_USER"],
    ["--password <secret>", "NATS password (prefer the environment variable: flags show in ps)", "LEASEHOLD_PASSWORD"],
    ["--token <token>", "NATS authentication token", "LEASEHOLD_TOKEN"],
    ["--tls-ca <file>", "CA certificate(s) to trust for the server's TLS certificate", "LEASEHOLD_TLS_CA"],
    ["--tls-cert <file>", "client TLS certificate (with --tls-key)", "LEASEHOLD_TLS_CERT"],
    ["--tls-key <file>", "private key of --tls-cert", "LEASEHOLD_TLS_KEY"],
    [
      "--inbox-prefix <prefix>",
      "subject prefix of this connection's reply inboxes (default _INBOX_<user> with --user, as nats-config's users need; else _INBOX)",
      "LEASEHOLD_INBOX_PREFIX",
    ],
  ]);
}

/** The flags of `serve`'s second connection, the one that appends (as commander hands them over). */
export interface AppendConnectionFlags {
  readonly appendCreds?: string | undefined;
  readonly appendUser?: string | undefined;
  readonly appendPassword?: string | undefined;
  readonly appendInboxPrefix?: string | undefined;
}

/** Adds `serve`'s flags naming the user that appends (`--append-creds`, `--append-user`/`--append-password`, `--append-inbox-prefix`). */
export function addAppendOptions(command: Command): Command {
  return addEnvFlags(command, [
    [
      "--append-creds <file>",
      "credentials of the NATS user that appends events (with --nats); without any --append-* the one connection does everything",
      "LEASEHOLD_APPEND_CREDS",
    ],
    ["--append-user <name>", "NATS user that appends events (with --append-password)", "LEASEHOLD_APPEND_USER"],
    ["--append-password <secret>", "password of --append-user (prefer the environment variable)", "LEASEHOLD_APPEND_PASSWORD"],
    [
      "--append-inbox-prefix <prefix>",
      "reply prefix of the appending connection (default _INBOX_<user> with --append-user)",
      "LEASEHOLD_APPEND_INBOX_PREFIX",
    ],
  ]);
}

/**
 * The target of the appending connection: the same servers and TLS as
 * `flags`, its own credentials; undefined when no `--append-*` flag is given.
 */
export function appendTarget(flags: ConnectionFlags & AppendConnectionFlags, servers: string[]): NatsTarget | undefined {
  const given = [flags.appendCreds, flags.appendUser, flags.appendPassword, flags.appendInboxPrefix].some((v) => nonEmpty(v) !== undefined);
  if (!given) return undefined;
  if (nonEmpty(flags.appendCreds) === undefined && nonEmpty(flags.appendUser) === undefined)
    throw new UsageError("--append-inbox-prefix and --append-password need --append-user or --append-creds");
  try {
    return natsTarget(
      {
        nats: servers.join(","),
        creds: flags.appendCreds,
        user: flags.appendUser,
        password: flags.appendPassword,
        inboxPrefix: flags.appendInboxPrefix,
        tlsCa: flags.tlsCa,
        tlsCert: flags.tlsCert,
        tlsKey: flags.tlsKey,
      },
      servers,
    );
  } catch (e) {
    // The checks speak of the main flags: name the --append-* ones instead.
    if (e instanceof UsageError)
      throw new UsageError(
        e.message
          .replace(/--(creds|user|password|inbox-prefix)\b/g, "--append-$1")
          .replace(/LEASEHOLD_(USER|PASSWORD)\b/g, "LEASEHOLD_APPEND_$1"),
        { cause: e },
      );
    throw e;
  }
}

/**
 * The NATS server list named by `--nats` / `LEASEHOLD_NATS`, else `NATS_URL`,
 * else undefined. Each entry must be `nats://host[:port]`, `tls://host[:port]`
 * or `host:port`.
 */
export function natsServers(flags: Pick<ConnectionFlags, "nats">, env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const raw = nonEmpty(flags.nats) ?? nonEmpty(env.NATS_URL);
  if (raw === undefined) return undefined;
  const servers = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (servers.length === 0) throw new UsageError(`--nats: no URL in ${JSON.stringify(raw)}`);
  for (const server of servers) checkServer(server);
  return servers;
}

function checkServer(server: string): void {
  const bad = (why: string) =>
    new UsageError(`--nats: ${JSON.stringify(server)} is not a NATS URL (${why}; expected nats://host:port, several separated by commas)`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(server)?.[1]?.toLowerCase();
  if (scheme === undefined && !/^[^/:\s]+:\d+$/.test(server) && !/^\[[0-9a-f:]+\]:\d+$/i.test(server)) throw bad("no scheme and no port");
  if (scheme !== undefined && scheme !== "nats" && scheme !== "tls") throw bad(`scheme ${scheme}:// is not nats:// or tls://`);
  let url: URL;
  try {
    url = new URL(scheme === undefined ? `nats://${server}` : server);
  } catch {
    throw bad("unparsable");
  }
  if (url.hostname === "") throw bad("no host");
  if (url.pathname !== "" && url.pathname !== "/") throw bad("a NATS URL has no path");
}

/** Reads the connection flags into a {@link NatsTarget}; `fallback` is used when no server is named. */
export function natsTarget(flags: ConnectionFlags, fallback: string[], env: NodeJS.ProcessEnv = process.env): NatsTarget {
  const servers = natsServers(flags, env) ?? fallback;
  const user = nonEmpty(flags.user);
  const password = flags.password;
  const token = nonEmpty(flags.token);
  const creds = nonEmpty(flags.creds);
  if (password !== undefined && user === undefined) throw new UsageError("--password needs --user (or LEASEHOLD_USER)");
  if (user !== undefined && password === undefined) throw new UsageError("--user needs --password (or LEASEHOLD_PASSWORD)");
  const schemes = [creds && "--creds", user && "--user/--password", token && "--token"].filter(Boolean);
  if (schemes.length > 1) throw new UsageError(`${schemes.join(" and ")}: give one way to authenticate`);
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) throw new UsageError("--tls-cert and --tls-key go together");
  const auth: { -readonly [K in keyof NatsTarget["auth"]]: NatsTarget["auth"][K] } = {};
  if (creds !== undefined) auth.authenticator = credsAuthenticator(readFlagFile("--creds", creds));
  if (user !== undefined) {
    auth.user = user;
    auth.pass = password;
  }
  if (token !== undefined) auth.token = token;
  const tlsCa = nonEmpty(flags.tlsCa);
  const tlsCert = nonEmpty(flags.tlsCert);
  const tlsKey = nonEmpty(flags.tlsKey);
  if (tlsCa !== undefined || tlsCert !== undefined) {
    // Read now so that a wrong path is a usage error, not a failed handshake.
    auth.tls = {
      ...(tlsCa === undefined ? {} : { ca: readFlagFile("--tls-ca", tlsCa).toString("utf8") }),
      ...(tlsCert === undefined ? {} : { cert: readFlagFile("--tls-cert", tlsCert).toString("utf8") }),
      ...(tlsKey === undefined ? {} : { key: readFlagFile("--tls-key", tlsKey).toString("utf8") }),
    };
  }
  const inboxPrefix = inboxPrefixFor(flags.inboxPrefix, user);
  return {
    servers,
    label: servers.join(","),
    auth,
    hasCredentials: Object.keys(auth).length > 0,
    ...(inboxPrefix === undefined ? {} : { inboxPrefix }),
  };
}

/** `--inbox-prefix` when given (checked: subject tokens, no wildcards), else the named user's `_INBOX_<user>`. */
function inboxPrefixFor(given: string | undefined, user: string | undefined): string | undefined {
  const flag = nonEmpty(given);
  if (flag === undefined) return user === undefined ? undefined : inboxPrefixOf(user);
  if (!isValidPrefix(flag))
    throw new UsageError(`--inbox-prefix: subject tokens separated by dots, without wildcards, got ${JSON.stringify(flag)}`);
  return flag;
}

function readFlagFile(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

/**
 * Connects to `target` with `options` added; a failure becomes a one-line
 * {@link ConnectFailure} naming the servers and what to check.
 */
export async function connectTo(target: NatsTarget, options: ConnectionOptions = {}): Promise<NatsConnection> {
  try {
    return await connect({
      timeout: 5000,
      ...options,
      ...target.auth,
      ...(target.inboxPrefix === undefined ? {} : { inboxPrefix: target.inboxPrefix }),
      servers: target.servers,
    });
  } catch (e) {
    throw new ConnectFailure(explainConnectError(target, e), { cause: e });
  }
}

/** One line saying why connecting to `target` failed. */
export function explainConnectError(target: NatsTarget, error: unknown): string {
  const where = `NATS at ${target.label}`;
  if (error instanceof AuthorizationError || /authoriz|authenticat/i.test(String((error as Error).message))) {
    return `${where} refused the credentials (${target.hasCredentials ? "check --creds, --user/--password or --token" : "it needs --creds, --user/--password or --token"})`;
  }
  // Reached, but the flags do not fit: name the flags, not the server list.
  const message = String((error as Error).message);
  if (/unable to parse credentials|invalid (nkey|seed|jwt)/i.test(message))
    return `--creds (or --append-creds): not a NATS credentials file, a user JWT and an NKey seed (${message.toLowerCase()})`;
  if (/server does not support 'tls'/i.test(message))
    return `${where} speaks no TLS, but --tls-ca, --tls-cert or a tls:// URL asks for it: drop them, or name the server's TLS port`;
  const codes = new Set<string>();
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string") codes.add(code);
    if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH/.test(e.message)) codes.add(/E[A-Z_]+/.exec(e.message)![0]);
  }
  const why =
    codes.has("ENOTFOUND") || codes.has("EAI_AGAIN")
      ? "unknown host"
      : codes.has("ECONNREFUSED")
        ? "connection refused: is nats-server running there?"
        : /timeout/i.test(String((error as Error).message))
          ? "no answer in time"
          : String((error as Error).message).toLowerCase();
  return `cannot connect to ${where}: ${why} (set --nats, LEASEHOLD_NATS or NATS_URL)`;
}
