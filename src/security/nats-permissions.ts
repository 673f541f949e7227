/**
 * Least privilege on NATS for one prefix, as allow-lists (never deny-lists,
 * which miss whatever a later version adds): what the service, each client
 * and the auditor may publish and subscribe to, and the accounts that hold
 * them (`leasehold nats-config`; nats-config-text.ts writes them out).
 *
 * The service is two users, so that the server itself refuses a reply aimed
 * at the service's own or NATS's subjects (no `allow_responses`, which lets a
 * responder publish to whatever reply subject a request names):
 * - service (answers): takes commands (queue group), host loads and discovery
 *   requests, and publishes only to the clients' reply prefixes; no JetStream;
 * - appender: appends events, creates and uses the streams, the command
 *   consumer and the snapshot bucket, reports durable command errors, and
 *   receives under its own inbox prefix, which the answering user may not publish to.
 * - client: sends commands (request and durable), discovery requests and
 *   host loads (a host's agent is a client), reads the event stream and
 *   the durable command errors; subscribes only under its own inbox prefix
 *   (`_INBOX_<user>`; the anonymous user of the local server keeps the
 *   standard `_INBOX`, which only anonymous connections share).
 * - auditor: reads the event stream, nothing else.
 *
 * Two layouts: `users` puts everyone in one account (the shipped nats.conf);
 * `accounts` gives the service an account of its own that exports what
 * clients may use, and each client (and operator) an account importing it,
 * the commands with `share: true`, so that every request carries the
 * server-written `Nats-Request-Info` naming its account and user.
 */
import { Subjects } from "../contract/subjects.ts";

/** Allowed subjects of one user. */
export interface Permissions {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
}

/** What a user is for. */
export type Role = "service" | "appender" | "client" | "operator" | "auditor";

/** One user of the generated configuration. */
export interface RoleUser {
  readonly user: string;
  readonly role: Role;
  /** The environment variable nats-server reads the password from; none for the anonymous user. */
  readonly passwordEnv?: string;
  /** Where this user's replies arrive (`inboxPrefix` of its connection). */
  readonly inboxPrefix: string;
  readonly permissions: Permissions;
}

/** What an account offers other accounts: a service (requests, or plain publications, into it) or a stream (its publications, out). */
export interface AccountExport {
  readonly service?: string;
  readonly stream?: string;
  /** `stream` when one request gets several replies (discovery, a consumer's pull). */
  readonly responseType?: "stream";
  /** The 1-based token of `service` that must be the importing account's name. */
  readonly accountTokenPosition?: number;
}

/** What an account takes from another one. */
export interface AccountImport {
  readonly kind: "service" | "stream";
  readonly account: string;
  readonly subject: string;
  /** The importer's own subject for it (services only). */
  readonly to?: string;
  /** The server adds the requester's user (not only its account) to `Nats-Request-Info`. */
  readonly share?: boolean;
}

/** One account of the configuration. */
export interface NatsAccount {
  readonly name: string;
  readonly jetstream: boolean;
  readonly users: readonly RoleUser[];
  readonly exports: readonly AccountExport[];
  readonly imports: readonly AccountImport[];
}

/** How the users are laid out. */
export type NatsLayout = "users" | "accounts";

/** Settings of {@link natsAccounts}. */
export interface NatsConfigOptions {
  readonly prefix: string;
  /** `users` (default): one account; `accounts`: the service's own account and one per client and operator. */
  readonly layout?: NatsLayout;
  /** Named client users, each with its own inbox prefix and password variable (default none). */
  readonly clients?: readonly string[];
  /** Named operators (account layout): clients whom the service lets call operator ops (`--operators`). */
  readonly operators?: readonly string[];
  /** Also a client user for connections without credentials, `client` (the local server's default; users layout only). */
  readonly anonymousClient?: boolean;
}

/** The environment variable holding `user`'s password: `LEASEHOLD_<USER>_PASSWORD`. */
export function passwordEnvOf(user: string): string {
  return `LEASEHOLD_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_PASSWORD`;
}

/** The service user of a prefix (the one that answers): `leasehold` for the default prefix, else `<prefix>-service`. */
export function serviceUserOf(prefix: string): string {
  return prefix === "leasehold" ? "leasehold" : `${prefix}-service`;
}

/** The user that appends: `leasehold-append` for the default prefix, else `<prefix>-append`. */
export function appendUserOf(prefix: string): string {
  return `${prefix}-append`;
}

/** The environment variable holding the service user's password (the local server's own name for the default prefix). */
export function servicePasswordEnvOf(prefix: string): string {
  return prefix === "leasehold" ? "LEASEHOLD_SERVICE_PASSWORD" : passwordEnvOf(serviceUserOf(prefix));
}

/** The environment variable holding the appending user's password. */
export function appendPasswordEnvOf(prefix: string): string {
  return prefix === "leasehold" ? "LEASEHOLD_APPEND_PASSWORD" : passwordEnvOf(appendUserOf(prefix));
}

/** The auditor user of a prefix. */
export function auditorUserOf(prefix: string): string {
  return prefix === "leasehold" ? "auditor" : `${prefix}-auditor`;
}

/** The inbox prefix a named user must connect with. */
export function inboxPrefixOf(user: string): string {
  return `_INBOX_${user}`;
}

/** The account the service lives in: the prefix as stream names spell it (`LEASEHOLD`). */
export function accountOf(prefix: string): string {
  return new Subjects(prefix).eventStream.slice(0, -"_EVENTS".length);
}

/**
 * The service flags that match an account layout: principals from
 * `Nats-Request-Info`, its operators as `--operators`, each as its account
 * (`<name>/*`: the account has that one user), which is all a durable
 * command of theirs proves.
 */
export function serviceFlagsOf(options: Pick<NatsConfigOptions, "operators">): string[] {
  const operators = options.operators ?? [];
  return ["--principals", "nats-request-info", ...(operators.length > 0 ? ["--operators", operators.map((o) => `${o}/*`).join(",")] : [])];
}

const USER_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
/** Account names are one subject token: the durable commands' export puts the account's name in the subject. */
const ACCOUNT_NAME = /^[A-Za-z0-9_-]+$/;

/** The subjects each role works with, for one prefix. */
function subjectSets(prefix: string) {
  const s = new Subjects(prefix);
  const events = s.eventStream;
  const objStream = `OBJ_${s.projectionBucket}`;
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
  const append = [
    `${prefix}.events.>`,
    `${prefix}.cmd-errors.>`,
    `$O.${s.projectionBucket}.>`,
    "$JS.API.INFO",
    "$JS.API.STREAM.NAMES",
    // Which account this user is in: `--principals nats-request-info` refuses to start in the global account.
    "$SYS.REQ.USER.INFO",
    ...[events, s.commandStream, objStream].flatMap(ownStream),
    // Replacing a snapshot object purges its old chunks (the event stream denies purges itself).
    `$JS.API.STREAM.PURGE.${objStream}`,
  ];
  const discovery = ["$SRV.PING", "$SRV.PING.>", "$SRV.INFO", "$SRV.INFO.>", "$SRV.STATS", "$SRV.STATS.>"];
  return { s, readEvents, append, discovery, answer: [`${prefix}.v1.>`, s.allLoads, ...discovery] };
}

/** The two service users: one answers (replies only to `replyTo`), one appends. */
function serviceUsers(prefix: string, replyTo: readonly string[]): RoleUser[] {
  const { append, answer } = subjectSets(prefix);
  const appender = appendUserOf(prefix);
  return [
    {
      user: serviceUserOf(prefix),
      role: "service",
      passwordEnv: servicePasswordEnvOf(prefix),
      inboxPrefix: inboxPrefixOf(serviceUserOf(prefix)),
      // Replies (and `Leasehold-Reply-To` answers) only to the clients' reply prefixes: never to a stream, bucket or API subject.
      permissions: { publish: replyTo, subscribe: answer },
    },
    {
      user: appender,
      role: "appender",
      passwordEnv: appendPasswordEnvOf(prefix),
      inboxPrefix: inboxPrefixOf(appender),
      permissions: { publish: append, subscribe: [`${inboxPrefixOf(appender)}.>`] },
    },
  ];
}

/** What a client user may do, receiving under `inbox`. */
function clientPermissions(prefix: string, inbox: string): Permissions {
  const { s, discovery, readEvents } = subjectSets(prefix);
  return {
    publish: [`${prefix}.v1.>`, `${prefix}.cmd.>`, s.allLoads, ...discovery, ...readEvents],
    subscribe: [`${inbox}.>`, `${prefix}.cmd-errors.>`],
  };
}

function auditorUser(prefix: string): RoleUser {
  const auditor = auditorUserOf(prefix);
  return {
    user: auditor,
    role: "auditor",
    passwordEnv: passwordEnvOf(auditor),
    inboxPrefix: inboxPrefixOf(auditor),
    permissions: { publish: subjectSets(prefix).readEvents, subscribe: [`${inboxPrefixOf(auditor)}.>`] },
  };
}

function namedUser(prefix: string, name: string, role: "client" | "operator"): RoleUser {
  return {
    user: name,
    role,
    passwordEnv: passwordEnvOf(name),
    inboxPrefix: inboxPrefixOf(name),
    permissions: clientPermissions(prefix, inboxPrefixOf(name)),
  };
}

/** Checks the names: subject tokens, none twice, none a service user's, auditor's or the service account's. */
function checkNames(options: NatsConfigOptions): void {
  const p = options.prefix;
  const names = [...(options.clients ?? []), ...(options.operators ?? [])];
  const accounts = options.layout === "accounts";
  const taken = new Set([serviceUserOf(p), appendUserOf(p), auditorUserOf(p), "client"]);
  const seen = new Set<string>();
  for (const name of names) {
    if (!(accounts ? ACCOUNT_NAME : USER_NAME).test(name))
      throw new Error(
        `client user names are ${accounts ? "one subject token" : "subject tokens"} (A-Z a-z 0-9 _ -), got ${JSON.stringify(name)}`,
      );
    if (taken.has(name) || (accounts && name.toUpperCase() === accountOf(p).toUpperCase()))
      throw new Error(`${JSON.stringify(name)} is the name of a user or account the configuration already has`);
    if (seen.has(name)) throw new Error(`${JSON.stringify(name)} is named twice`);
    seen.add(name);
  }
  if (accounts && options.anonymousClient) throw new Error("the account layout has no anonymous client: name each client");
  if (!accounts && (options.operators ?? []).length > 0) throw new Error("operators are principals of the account layout");
}

/** Every account of the configuration with its users, exports and imports. */
export function natsAccounts(options: NatsConfigOptions): NatsAccount[] {
  checkNames(options);
  return options.layout === "accounts" ? accountLayout(options) : [userLayout(options)];
}

/** Every user of the configuration with its allow-lists, across its accounts. */
export function natsUsers(options: NatsConfigOptions): RoleUser[] {
  return natsAccounts(options).flatMap((a) => a.users);
}

/** One account holding the service users, the clients and the auditor. */
function userLayout(options: NatsConfigOptions): NatsAccount {
  const p = options.prefix;
  const names = options.clients ?? [];
  const clientInboxes = [...(options.anonymousClient ? ["_INBOX"] : []), ...names.map(inboxPrefixOf)];
  const users = serviceUsers(
    p,
    clientInboxes.map((inbox) => `${inbox}.>`),
  );
  if (options.anonymousClient)
    users.push({ user: "client", role: "client", inboxPrefix: "_INBOX", permissions: clientPermissions(p, "_INBOX") });
  for (const name of names) users.push(namedUser(p, name, "client"));
  users.push(auditorUser(p));
  return { name: accountOf(p), jetstream: true, users, exports: [], imports: [] };
}

/**
 * The service's account (JetStream, the service users, the auditor) exporting
 * what clients use, and one account per client and operator importing it:
 * commands with `share: true`; durable commands through an export whose
 * account token position lets each account publish only to
 * `<prefix>.cmd.<account>.>` (the import maps the client's own
 * `<prefix>.cmd.>` there); the event stream's reads; and each client's inbox
 * exported back, so that a durable command's `Leasehold-Reply-To` reaches it.
 */
function accountLayout(options: NatsConfigOptions): NatsAccount[] {
  const p = options.prefix;
  const { s, readEvents, discovery } = subjectSets(p);
  const service = accountOf(p);
  const named = [
    ...(options.clients ?? []).map((name) => ({ name, role: "client" as const })),
    ...(options.operators ?? []).map((name) => ({ name, role: "operator" as const })),
  ];
  // Requests that crossed an import are answered on `_R_.…`, which the server maps back to the requester's inbox.
  const users = serviceUsers(p, ["_R_.>", ...named.map(({ name }) => `${inboxPrefixOf(name)}.>`)]);
  users.push(auditorUser(p));
  const commandsToken = p.split(".").length + 2;
  const exports: AccountExport[] = [
    { service: `${p}.v1.>` },
    // Discovery: every instance answers one request.
    ...discovery.map((subject) => ({ service: subject, responseType: "stream" as const })),
    { service: `${p}.cmd.*.>`, accountTokenPosition: commandsToken },
    { service: s.allLoads },
    { stream: `${p}.cmd-errors.>` },
    ...readEvents.map((subject) =>
      subject.includes("MSG.NEXT") ? { service: subject, responseType: "stream" as const } : { service: subject },
    ),
  ];
  const accounts: NatsAccount[] = [
    {
      name: service,
      jetstream: true,
      users,
      exports,
      imports: named.map(({ name }) => ({ kind: "service", account: name, subject: `${inboxPrefixOf(name)}.>` })),
    },
  ];
  for (const { name, role } of named) {
    const imports: AccountImport[] = [
      { kind: "service", account: service, subject: `${p}.v1.>`, share: true },
      ...discovery.map((subject) => ({ kind: "service" as const, account: service, subject })),
      { kind: "service", account: service, subject: `${p}.cmd.${name}.>`, to: `${p}.cmd.>` },
      { kind: "service", account: service, subject: s.allLoads },
      { kind: "stream", account: service, subject: `${p}.cmd-errors.>` },
      ...readEvents.map((subject) => ({ kind: "service" as const, account: service, subject })),
    ];
    accounts.push({
      name,
      jetstream: false,
      users: [namedUser(p, name, role)],
      exports: [{ service: `${inboxPrefixOf(name)}.>` }],
      imports,
    });
  }
  return accounts;
}
