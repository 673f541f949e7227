/**
 * The account layout `leasehold nats-config --layout accounts` writes, as a
 * bench's nats-server: the service in an account of its own (its answering
 * and appending users), one client account importing the commands with
 * `share: true`, plus what the bench's ceiling responder needs to live in the
 * service account beside it: its request subjects exported and imported the
 * same way, and its stream open to the appending user.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { natsConfig } from "../src/security/nats-config-text.ts";
import {
  appendPasswordEnvOf,
  appendUserOf,
  inboxPrefixOf,
  natsUsers,
  passwordEnvOf,
  servicePasswordEnvOf,
  serviceUserOf,
  type NatsConfigOptions,
} from "../src/security/nats-permissions.ts";
import { startBenchNats, type BenchNats, type BenchUser, type ServiceUsers } from "./support.ts";

/** A running account-layout server and the users the bench connects as. */
export interface AccountLayoutNats {
  readonly nats: BenchNats;
  /** The service's two users (the ceiling runs as them too). */
  readonly service: ServiceUsers;
  /** The client account's user the load connects as (its requests cross the import). */
  readonly client: BenchUser;
}

/** The client account (and user) the load connects as. */
export const BENCH_CLIENT = "bench-client";

const line = (indent: string, text: string) => `${indent}${text}\n`;

/**
 * `text` with the ceiling's requests (`<prefix>.ceiling.v1.>`) exported,
 * imported with `share: true`, served and sent exactly where the commands
 * (`<prefix>.v1.>`) are, and the ceiling's stream open to the appending user
 * beside the event stream.
 */
export function withCeiling(text: string, prefix: string, stream: string): string {
  const v1 = `${prefix}.v1.>`;
  const ceiling = `${prefix}.ceiling.v1.>`;
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\$]/g, "\\$&");
  return (
    text
      // The service user's subscribe list and each client's publish list.
      .replace(new RegExp(`^(\\s*)"${esc(v1)}",\\n`, "gm"), (all, indent: string) => all + line(indent, `"${ceiling}",`))
      // The service account's export.
      .replace(
        new RegExp(`^(\\s*)\\{ service: "${esc(v1)}" \\}\\n`, "gm"),
        (all, indent: string) => all + line(indent, `{ service: "${ceiling}" }`),
      )
      // Each client account's import.
      .replace(
        new RegExp(`^(\\s*)(\\{ service: \\{ account: "[^"]+", subject: ")${esc(v1)}(" \\}, share: true \\})\\n`, "gm"),
        (all, indent: string, head: string, tail: string) => all + line(indent, `${head}${ceiling}${tail}`),
      )
      // The appending user: the ceiling's stream as the event stream's.
      .replace(new RegExp(`^(\\s*)"${esc(`${prefix}.events.>`)}",\\n`, "m"), (all, indent: string) =>
        [
          all,
          line(indent, `"${prefix}.ceiling.events.>",`),
          ...["CREATE", "UPDATE", "INFO"].map((op) => line(indent, `"$JS.API.STREAM.${op}.${stream}",`)),
        ].join(""),
      )
  );
}

/** Starts nats-server from the account layout of `prefix` (one client account, {@link BENCH_CLIENT}) with the ceiling's additions, random passwords passed through the environment. */
export async function startAccountLayoutNats(prefix: string, ceilingStream: string): Promise<AccountLayoutNats> {
  const options: NatsConfigOptions = { prefix, layout: "accounts", clients: [BENCH_CLIENT] };
  // Starting with letters: nats-server parses a variable's value as a configuration value, and "8e12..." is a number.
  const password = `pw-${randomBytes(12).toString("hex")}`;
  const env: Record<string, string> = {
    [servicePasswordEnvOf(prefix)]: password,
    [appendPasswordEnvOf(prefix)]: password,
  };
  for (const { user } of natsUsers(options))
    if (user !== serviceUserOf(prefix) && user !== appendUserOf(prefix)) env[passwordEnvOf(user)] = password;
  const userOf = (user: string): BenchUser => ({ user, pass: password, inboxPrefix: inboxPrefixOf(user) });
  const nats = await startBenchNats({
    configure: (dir) => withCeiling(natsConfig({ ...options, listen: "127.0.0.1:-1", storeDir: join(dir, "js") }), prefix, ceilingStream),
    env,
  });
  return {
    nats,
    service: { answering: userOf(serviceUserOf(prefix)), appending: userOf(appendUserOf(prefix)) },
    client: userOf(BENCH_CLIENT),
  };
}
