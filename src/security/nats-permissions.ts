/**
 * Least privilege on NATS for one prefix, as allow-lists (never deny-lists,
 * which miss whatever a later version adds): what the service, each client
 * and the auditor may publish and subscribe to, and the nats-server
 * configuration that grants exactly that (`leasehold nats-config`).
 *
 * - service: takes commands (queue group) and host loads, answers discovery, appends events,
 *   creates and uses its streams, consumer and buckets; replies on a client's
 *   inbox (and to `Leasehold-Reply-To`, which names one).
 * - client: sends commands (request and durable), discovery requests and
 *   host loads (a host's agent is a client), reads the event stream and
 *   the durable command errors; subscribes only
 *   under its own inbox prefix (`_INBOX_<user>`; the anonymous user of the
 *   local server keeps the standard `_INBOX`, which only anonymous
 *   connections share).
 * - auditor: reads the event stream, nothing else.
 */
import { Subjects } from "../contract/subjects.ts";

/** Allowed subjects of one user. */
export interface Permissions {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
  /** May reply to the reply subject of a message it received (and only that, once). */
  readonly allowResponses?: boolean;
}

/** One user of the generated configuration. */
export interface RoleUser {
  readonly user: string;
  readonly role: "service" | "client" | "auditor";
  /** The environment variable nats-server reads the password from; none for the anonymous user. */
  readonly passwordEnv?: string;
  /** Where this user's replies arrive (`inboxPrefix` of its connection). */
  readonly inboxPrefix: string;
  readonly permissions: Permissions;
}

/** Settings of {@link natsUsers}. */
export interface NatsConfigOptions {
  readonly prefix: string;
  /** Named client users, each with its own inbox prefix and password variable (default none). */
  readonly clients?: readonly string[];
  /** Also a client user for connections without credentials, `client` (the local server's default). */
  readonly anonymousClient?: boolean;
}

/** The environment variable holding `user`'s password: `LEASEHOLD_<USER>_PASSWORD`. */
export function passwordEnvOf(user: string): string {
  return `LEASEHOLD_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_PASSWORD`;
}

/** The service user of a prefix: `leasehold` for the default prefix, else `<prefix>-service`. */
export function serviceUserOf(prefix: string): string {
  return prefix === "leasehold" ? "leasehold" : `${prefix}-service`;
}

/** The auditor user of a prefix. */
export function auditorUserOf(prefix: string): string {
  return prefix === "leasehold" ? "auditor" : `${prefix}-auditor`;
}

/** The inbox prefix a named user must connect with. */
export function inboxPrefixOf(user: string): string {
  return `_INBOX_${user}`;
}

const USER_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** Every user of the configuration with its allow-lists. */
export function natsUsers(options: NatsConfigOptions): RoleUser[] {
  const s = new Subjects(options.prefix);
  const p = options.prefix;
  const events = s.eventStream;
  const commands = s.commandStream;
  const projections = s.projectionBucket;
  const objStream = `OBJ_${projections}`;
  const names = options.clients ?? [];
  for (const name of names)
    if (!USER_NAME.test(name)) throw new Error(`client user names are subject tokens (A-Z a-z 0-9 _ -), got ${JSON.stringify(name)}`);
  const service = serviceUserOf(p);
  const auditor = auditorUserOf(p);
  const clientInboxes = [...(options.anonymousClient ? ["_INBOX"] : []), ...names.map(inboxPrefixOf)];
  const discovery = ["$SRV.PING", "$SRV.PING.>", "$SRV.INFO", "$SRV.INFO.>", "$SRV.STATS", "$SRV.STATS.>"];

  /** What it takes to read the event stream: its info, single messages, and own ordered consumers. */
  const readEvents = [
    "$JS.API.INFO",
    `$JS.API.STREAM.INFO.${events}`,
    `$JS.API.STREAM.MSG.GET.${events}`,
    `$JS.API.DIRECT.GET.${events}`,
    `$JS.API.DIRECT.GET.${events}.>`,
    `$JS.API.CONSUMER.CREATE.${events}`,
    `$JS.API.CONSUMER.CREATE.${events}.>`,
    `$JS.API.CONSUMER.INFO.${events}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${events}.>`,
  ];
  /** Everything the service does with one of its streams. */
  const ownStream = (stream: string) => [
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.UPDATE.${stream}`,
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
    `$JS.API.CONSUMER.NAMES.${stream}`,
    `$JS.API.CONSUMER.LIST.${stream}`,
    `$JS.ACK.${stream}.>`,
  ];

  const users: RoleUser[] = [
    {
      user: service,
      role: "service",
      // The local server's own name for it (leasehold serve sets it at every start).
      passwordEnv: p === "leasehold" ? "LEASEHOLD_SERVICE_PASSWORD" : passwordEnvOf(service),
      inboxPrefix: inboxPrefixOf(service),
      permissions: {
        publish: [
          `${p}.events.>`,
          `${p}.cmd-errors.>`,
          `$O.${projections}.>`,
          "$JS.API.INFO",
          "$JS.API.STREAM.NAMES",
          ...[events, commands, objStream].flatMap(ownStream),
          // Replacing a snapshot object purges its old chunks (the event stream denies purges itself).
          `$JS.API.STREAM.PURGE.${objStream}`,
          // Durable commands' `Leasehold-Reply-To` names a client's inbox.
          ...clientInboxes.map((inbox) => `${inbox}.>`),
        ],
        // With an anonymous client the standard `_INBOX` is shared anyway, and a service started without an inbox prefix uses it.
        subscribe: [`${p}.v1.>`, s.allLoads, ...discovery, `${inboxPrefixOf(service)}.>`, ...(options.anonymousClient ? ["_INBOX.>"] : [])],
        allowResponses: true,
      },
    },
  ];
  const clientPermissions = (inbox: string): Permissions => ({
    publish: [`${p}.v1.>`, `${p}.cmd.>`, s.allLoads, ...discovery, ...readEvents],
    subscribe: [`${inbox}.>`, `${p}.cmd-errors.>`],
  });
  if (options.anonymousClient)
    users.push({ user: "client", role: "client", inboxPrefix: "_INBOX", permissions: clientPermissions("_INBOX") });
  for (const name of names) {
    users.push({
      user: name,
      role: "client",
      passwordEnv: passwordEnvOf(name),
      inboxPrefix: inboxPrefixOf(name),
      permissions: clientPermissions(inboxPrefixOf(name)),
    });
  }
  users.push({
    user: auditor,
    role: "auditor",
    passwordEnv: passwordEnvOf(auditor),
    inboxPrefix: inboxPrefixOf(auditor),
    permissions: { publish: readEvents, subscribe: [`${inboxPrefixOf(auditor)}.>`] },
  });
  return users;
}

/** The account the users live in: the prefix as stream names spell it (`LEASEHOLD`). */
export function accountOf(prefix: string): string {
  return new Subjects(prefix).eventStream.slice(0, -"_EVENTS".length);
}

/** Settings of {@link natsConfig}. */
export interface NatsConfigText extends NatsConfigOptions {
  /** Only the `accounts` block, to `include` in an existing server configuration. */
  readonly accountsOnly?: boolean;
  /** `listen` of a whole configuration (default 127.0.0.1:4222). */
  readonly listen?: string;
  /** JetStream store of a whole configuration (default `.leasehold/jetstream`, relative to where nats-server starts). */
  readonly storeDir?: string;
}

const q = (s: string) => JSON.stringify(s);
const list = (items: readonly string[], indent: string) => `[\n${items.map((i) => `${indent}  ${q(i)}`).join(",\n")}\n${indent}]`;

/** The nats-server configuration text. */
export function natsConfig(options: NatsConfigText): string {
  const users = natsUsers(options);
  const account = accountOf(options.prefix);
  const lines: string[] = [];
  const header = [
    `# Generated by \`leasehold nats-config --prefix ${options.prefix}${options.accountsOnly ? " --accounts" : ""}\`; edit that, not this.`,
    "# Least privilege as allow-lists: the service alone writes events, streams and",
    "# buckets; clients send commands and read the event stream, and receive replies",
    "# only under their own inbox prefix (connect with inboxPrefix _INBOX_<user>);",
    "# the auditor reads the event stream. Passwords come from the environment",
    "# (nats-server refuses to start when one is missing).",
  ];
  lines.push(...header);
  if (!options.accountsOnly) {
    lines.push(
      `listen: ${options.listen ?? "127.0.0.1:4222"}`,
      "server_name: leasehold-local",
      "",
      "jetstream {",
      `  store_dir: ${q(options.storeDir ?? ".leasehold/jetstream")}`,
      "  max_memory_store: 256MB",
      "  max_file_store: 10GB",
      "}",
      "",
      "# Requests carry at most 64 KiB bodies; leave headroom for headers.",
      "max_payload: 1MB",
      "",
    );
  }
  lines.push("accounts {", `  ${account} {`, "    jetstream: enabled", "    users: [");
  for (const u of users) {
    const i = "        ";
    lines.push(
      `      # ${u.role}${u.passwordEnv === undefined ? " (connections without credentials)" : ""}; replies under ${u.inboxPrefix}`,
    );
    lines.push("      {");
    lines.push(`        user: ${q(u.user)}`);
    if (u.passwordEnv !== undefined) lines.push(`        password: $${u.passwordEnv}`);
    lines.push("        permissions: {");
    lines.push(`          publish: { allow: ${list(u.permissions.publish, `${i}  `)} }`);
    lines.push(`          subscribe: { allow: ${list(u.permissions.subscribe, `${i}  `)} }`);
    if (u.permissions.allowResponses) lines.push("          allow_responses: true");
    lines.push("        }");
    lines.push("      }");
  }
  lines.push("    ]", "  }", "}");
  if (!options.accountsOnly && options.anonymousClient)
    lines.push("", "# Connections without credentials are the anonymous client.", "no_auth_user: client");
  return `${lines.join("\n")}\n`;
}
