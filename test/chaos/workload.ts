/**
 * The chaos clients: many independent NATS connections, each running a
 * seeded mix of lock, proxy and route operations one after another, every
 * mutation with a requestId, each attempt bounded by a deadline and retried
 * with the same requestId until the operation's own deadline. Every logical
 * operation is recorded with its invoke and return instants.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { errors, type Msg, type NatsConnection } from "@nats-io/nats-core";
import type { Attempt, AttemptOutcome, OpRecord, OpResult } from "./history.ts";

/** A small seeded generator (mulberry32): the same seed gives the same workload. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
}

/** The shape of the load. */
export interface WorkloadSettings {
  readonly prefix: string;
  /** NATS URLs the clients may connect to. */
  readonly servers: readonly string[];
  /** The URLs of one client of the loop, by its index (default `servers`): a partition run keeps some on the minority node. */
  readonly serversOf?: (client: number) => readonly string[];
  readonly clients: number;
  readonly seed: number;
  /** Per-attempt deadline (default 2000 ms). */
  readonly attemptMs?: number;
  /** Per-operation deadline across retries (default 12000 ms); past it the outcome stays unknown. */
  readonly opDeadlineMs?: number;
  readonly locks?: number;
  readonly routes?: number;
  readonly proxies?: readonly string[];
  readonly hosts?: readonly string[];
  /** Proxy capacity registered at setup. */
  readonly proxyMaxLeases?: number;
  /** Lock TTLs are drawn from [min, max) ms (default [1000, 3000)). */
  readonly lockTtlMs?: readonly [number, number];
  /** Share of granted locks the client then leaves to expire (neither renewed nor released), as a dead holder would (default 0). */
  readonly abandonLocks?: number;
}

const DEFAULT_PROXIES = ["p0", "p1", "p2", "p3"];
const DEFAULT_HOSTS = ["h0", "h1", "h2"];
// A client does not start an attempt with less time than this left before its operation's deadline: an attempt
// allowed 4 ms times out on any scheduling hiccup, and would be counted as a request the service left unanswered.
const MIN_ATTEMPT_MS = 250;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A client-side view of a held lock lease. */
interface HeldLock {
  readonly name: string;
  readonly etag: string;
}

/** Sends logical operations with retries and records them. */
export class RecordingClient {
  private seq = 0;
  constructor(
    readonly name: string,
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly sink: OpRecord[],
    private readonly nextId: () => number,
    private readonly attemptMs: number,
    private readonly opDeadlineMs: number,
  ) {}

  /** Runs one logical operation to its definitive answer or its deadline. */
  async call(command: string, body: Record<string, unknown>, stop?: () => boolean): Promise<OpRecord> {
    const requestId = `${this.name}-${++this.seq}-${randomUUID().slice(0, 8)}`;
    const full = { ...body, requestId };
    const payload = encoder.encode(JSON.stringify(full));
    const invokeAt = Date.now();
    const record: OpRecord = {
      id: this.nextId(),
      client: this.name,
      command,
      body: full,
      requestId,
      invokeAt,
      returnAt: null,
      result: { status: "unknown" },
      attempts: [],
    };
    this.sink.push(record);
    const subject = `${this.prefix}.v1.${command}`;
    for (;;) {
      const left = invokeAt + this.opDeadlineMs - Date.now();
      if (left < Math.min(MIN_ATTEMPT_MS, this.attemptMs) || (stop?.() === true && record.attempts.length > 0)) return record;
      const sentAt = Date.now();
      let outcome: AttemptOutcome;
      let code: string | undefined;
      let message: string | undefined;
      try {
        const msg = await this.nc.request(subject, payload, { timeout: Math.min(this.attemptMs, left) });
        const result = decodeResult(msg);
        if (result.status === "error" && result.code === "UNAVAILABLE") {
          outcome = "unavailable";
          code = result.code;
          message = msg.headers?.get("Nats-Service-Error");
        } else {
          const endAt = Date.now();
          record.attempts.push({
            sentAt,
            endAt,
            outcome: result.status === "ok" ? "ok" : "error",
            ...(result.status === "error" ? { code: result.code } : {}),
          });
          record.returnAt = endAt;
          record.result = result;
          return record;
        }
      } catch (e) {
        outcome = e instanceof errors.TimeoutError ? "timeout" : e instanceof errors.NoRespondersError ? "no-responders" : "failed";
      }
      const attempt: Attempt = {
        sentAt,
        endAt: Date.now(),
        outcome,
        ...(code === undefined ? {} : { code }),
        ...(message === undefined ? {} : { message }),
      };
      record.attempts.push(attempt);
      // A timeout already waited; an immediate refusal (no responder, UNAVAILABLE, a closed connection) waits a little.
      if (outcome !== "timeout") await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function decodeResult(msg: Msg): OpResult {
  const text = decoder.decode(msg.data);
  const body = (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>;
  const status = msg.headers?.get("Nats-Service-Error-Code");
  if (status === undefined || status === "") return { status: "ok", body };
  const error = (body.error ?? {}) as Record<string, unknown>;
  const { code, message: _message, ...details } = error;
  return { status: "error", code: typeof code === "string" ? code : `STATUS_${status}`, details };
}

/** A running workload: its clients loop until stopped. */
export class Workload {
  readonly records: OpRecord[] = [];
  readonly proxies: readonly string[];
  readonly hosts: readonly string[];
  readonly lockNames: readonly string[];
  readonly routeNames: readonly string[];
  private readonly connections: NatsConnection[] = [];
  private running: Promise<void>[] = [];
  private stopping = false;
  private ids = 0;

  constructor(readonly settings: WorkloadSettings) {
    this.proxies = settings.proxies ?? DEFAULT_PROXIES;
    this.hosts = settings.hosts ?? DEFAULT_HOSTS;
    this.lockNames = Array.from({ length: settings.locks ?? 6 }, (_, i) => `lock-${i}`);
    this.routeNames = Array.from({ length: settings.routes ?? 6 }, (_, i) => `route-${i}`);
  }

  /** A recording client on its own connection; `opDeadlineMs` and `servers` override the workload's. */
  async client(name: string, opDeadlineMs?: number, servers = this.settings.servers): Promise<RecordingClient> {
    const nc = await connect({
      servers: [...servers],
      name: `chaos-${name}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 100,
      timeout: 5000,
    });
    this.connections.push(nc);
    return new RecordingClient(
      name,
      nc,
      this.settings.prefix,
      this.records,
      () => ++this.ids,
      this.settings.attemptMs ?? 2000,
      opDeadlineMs ?? this.settings.opDeadlineMs ?? 12_000,
    );
  }

  /** Registers the proxies and sets the hosts healthy (recorded like any operation). */
  async setup(): Promise<void> {
    const admin = await this.client("setup");
    for (const host of this.hosts) await expectOk(admin.call("host.set", { host, healthy: true }));
    for (const proxy of this.proxies) await expectOk(admin.call("proxy.register", { proxy, maxLeases: this.settings.proxyMaxLeases ?? 2 }));
  }

  /** Starts every client's loop. */
  start(): void {
    const root = new Rng(this.settings.seed);
    for (let i = 0; i < this.settings.clients; i++) {
      const seed = Math.floor(root.next() * 2 ** 32);
      const servers = this.settings.serversOf?.(i) ?? this.settings.servers;
      this.running.push(this.client(`c${i}`, undefined, servers).then((c) => this.loop(c, new Rng(seed))));
    }
  }

  /** Stops the loops (each finishes its current operation, bounded by its deadline) and closes the connections. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.running);
    this.running = [];
    await Promise.all(this.connections.map((nc) => nc.close().catch(() => undefined)));
  }

  private async loop(client: RecordingClient, rng: Rng): Promise<void> {
    const locks: HeldLock[] = [];
    let proxyLease: string | undefined;
    while (!this.stopping) {
      const dice = rng.next();
      if (dice < 0.5) await this.lockStep(client, rng, locks);
      else if (dice < 0.75) proxyLease = await this.proxyStep(client, rng, proxyLease);
      else await this.routeStep(client, rng);
    }
  }

  private async lockStep(client: RecordingClient, rng: Rng, held: HeldLock[]): Promise<void> {
    const owner = client.name;
    const dice = rng.next();
    if (held.length > 0 && dice < 0.5) {
      const lease = held.shift()!;
      if (rng.next() < 0.5) {
        const r = await client.call("lock.renew", { name: lease.name, owner, etag: lease.etag, ttlMs: ttlMsOf(this.settings, rng) });
        if (r.result.status === "ok") held.push({ name: lease.name, etag: leaseOf(r.result.body).etag });
      } else {
        await client.call("lock.release", { name: lease.name, etag: lease.etag });
      }
      return;
    }
    const name = rng.pick(this.lockNames);
    if (dice < 0.65) {
      await client.call("lock.get", { name });
    } else if (dice < 0.7) {
      await client.call("lock.release", { name, etag: `stale-${rng.int(1000)}` });
    } else {
      const r = await client.call("lock.acquire", { name, owner, ttlMs: ttlMsOf(this.settings, rng) });
      const abandon = this.settings.abandonLocks !== undefined && rng.next() < this.settings.abandonLocks;
      if (r.result.status === "ok" && !abandon) held.push({ name, etag: leaseOf(r.result.body).etag });
    }
  }

  private async proxyStep(client: RecordingClient, rng: Rng, lease: string | undefined): Promise<string | undefined> {
    if (lease !== undefined) {
      const dice = rng.next();
      if (dice < 0.15) {
        await client.call("proxy.report", { leaseId: lease, result: rng.next() < 0.5 ? "rate_limited" : "ok" });
        return lease;
      }
      await client.call("proxy.release", { leaseId: lease });
      return undefined;
    }
    if (rng.next() < 0.1) {
      await client.call("proxy.counts", {});
      return undefined;
    }
    const r = await client.call("proxy.acquire", { ttlMs: 500 + rng.int(1500), target: `t${rng.int(3)}` });
    return r.result.status === "ok" ? ((r.result.body.lease as { id: string }).id ?? undefined) : undefined;
  }

  private async routeStep(client: RecordingClient, rng: Rng): Promise<void> {
    const route = rng.pick(this.routeNames);
    if (rng.next() < 0.2) {
      await client.call("route.get", { route });
      return;
    }
    await client.call("route.acquire", { route, fp: `f${rng.int(3)}`, model: "m", candidates: [...this.hosts] });
  }
}

/** A lock TTL from the workload's range. */
function ttlMsOf(settings: WorkloadSettings, rng: Rng): number {
  const [min, max] = settings.lockTtlMs ?? [1000, 3000];
  return min + rng.int(max - min);
}

function leaseOf(body: Record<string, unknown>): { etag: string } {
  return body.lease as { etag: string };
}

async function expectOk(pending: Promise<OpRecord>): Promise<void> {
  const r = await pending;
  if (r.result.status !== "ok")
    throw new Error(`setup ${r.command} failed: ${JSON.stringify(r.result)} after ${r.attempts.length} attempts`);
}
