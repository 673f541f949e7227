/**
 * Local nats-servers for development, tests, benchmarks and fault injection:
 * one node or a three-node JetStream cluster on free loopback ports, each
 * node with its own store folder, that can be killed with any signal and
 * restarted on the same ports and store (so a restart is what an operator's
 * supervisor would do, not a fresh server).
 *
 * Longer than 400 lines on purpose: one job (local servers a test can break),
 * and starting, readiness, kill, restart and "who leads this stream" all read
 * the same node table and the same readiness rule, which a split would have
 * to export to each half.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { makeDirectory } from "./make-directory.ts";
import { natsServerBinary } from "./nats-server-binary.ts";

/** Loopback only: nothing here is meant to be reachable from elsewhere. */
const HOST = "127.0.0.1";

/** One nats-server of a {@link LocalNatsCluster}. */
export interface LocalNatsNode {
  /** `server_name`, also what the JetStream API reports as a stream's leader. */
  readonly name: string;
  /** Client port. */
  readonly port: number;
  /** Cluster (route) port; 0 for a single node. */
  readonly clusterPort: number;
  /** HTTP monitoring port (`/healthz`, `/jsz`). */
  readonly monitorPort: number;
  /** JetStream store folder (kept across restarts). */
  readonly storeDir: string;
  readonly url: string;
  /** The process id while the node runs, else undefined. */
  readonly pid: number | undefined;
  /** True while the process runs. */
  readonly running: boolean;
}

/** Settings of {@link startLocalCluster}. */
export interface LocalClusterOptions {
  /** How many nodes (1: a plain server, no cluster block; default 3). */
  readonly size?: number;
  /** Folder for configs and stores; default a fresh temporary folder, removed by stop(). */
  readonly dir?: string;
  /** Client ports to use (one per node); default: free ports chosen at start. */
  readonly ports?: readonly number[];
  /** nats-server binary; default the project's (scripts/nats-server.sh). */
  readonly binary?: string;
  /** Cluster name (default `leasehold-<random>`, so that two local clusters never mistake each other's routes). */
  readonly name?: string;
  /** How long start and restart may take, ms (default 30000). */
  readonly readyTimeoutMs?: number;
  /** Where each node listens and how it is started (default: every port on 127.0.0.1, the binary run directly). */
  readonly network?: (node: number) => NodeNetwork;
  /** JetStream's `max_file_store` of every node (e.g. "1MB"), to drill a full store; default the server's (the disk). */
  readonly maxFileStore?: string;
  readonly logger?: Logger;
  /** Chooses each port not given (default {@link freePort}); tests give one that hands out a taken port. */
  readonly choosePort?: () => Promise<number>;
}

/**
 * Where one node listens and how it is started: the partition drill puts a
 * node in a network namespace of its own, reached over veth links.
 */
export interface NodeNetwork {
  /** Address of the client and monitoring ports. */
  readonly host: string;
  /** Address of the cluster (route) port. */
  readonly clusterHost: string;
  /** Words run before the binary, e.g. `["ip", "netns", "exec", "ns1"]` (it must exec the binary, so signals reach it). */
  readonly launcher?: readonly string[];
}

/** Every port on the loopback interface, the binary run directly. */
const LOOPBACK: NodeNetwork = { host: HOST, clusterHost: HOST };

/** A running set of local nats-servers. */
export interface LocalNatsCluster {
  readonly nodes: readonly LocalNatsNode[];
  /** Client URLs of every node, in node order. */
  readonly urls: readonly string[];
  /** The folder holding every node's config and store. */
  readonly dir: string;
  /** Sends `signal` (default SIGKILL) to a node and waits until its process has exited. */
  kill(node: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped node again on the same ports and store, and waits until it is ready (JetStream current). */
  restart(node: number): Promise<void>;
  /** Index of the node leading `stream` (its JetStream leader), asked through the JetStream API of a running node. */
  leaderOf(stream: string, timeoutMs?: number): Promise<number>;
  /** Resolves once every running node reports JetStream healthy and the cluster has a meta leader. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Stops every node (SIGTERM, then SIGKILL after 5 s) and removes the folder unless it was given. */
  stop(): Promise<void>;
}

/** A free TCP port on the loopback interface (the OS picks it; a short race with other programs remains). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Every child started here, so that an abrupt exit of the parent does not leave servers behind. */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of liveChildren) c.kill("SIGKILL");
    });
  }
}

/** The part of `/jsz`'s `meta_cluster` used here. */
interface MetaCluster {
  readonly leader?: string;
  /** `offline`: the leader has no word of the peer's server yet (no statsz), so it places no replica there. */
  readonly replicas?: readonly { readonly name: string; readonly current: boolean; readonly offline?: boolean }[];
}

class Node implements LocalNatsNode {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stderr = "";

  constructor(
    readonly name: string,
    readonly port: number,
    readonly clusterPort: number,
    readonly monitorPort: number,
    readonly storeDir: string,
    private readonly network: NodeNetwork,
    private readonly configFile: string,
    private readonly binary: string,
    private readonly logger: Logger | undefined,
  ) {}

  get url(): string {
    return `nats://${this.network.host}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The end of the server's own log, for error messages. */
  get logTail(): string {
    return this.stderr.trim();
  }

  start(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    const [command, ...args] = [...(this.network.launcher ?? []), this.binary, "-c", this.configFile] as const;
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    track(child);
    this.stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    this.child = child;
    this.logger?.info({ node: this.name, pid: child.pid, port: this.port }, "nats-server started");
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (!this.running) return;
    this.child?.kill(signal);
    await this.exited;
    this.logger?.info({ node: this.name, signal }, "nats-server stopped");
  }

  /** The node's view of the JetStream meta group (`/jsz`); the leader's view lists the other peers. */
  async metaCluster(): Promise<MetaCluster | undefined> {
    try {
      const response = await fetch(`http://${this.network.host}:${this.monitorPort}/jsz`, { signal: AbortSignal.timeout(1000) });
      return ((await response.json()) as { meta_cluster?: MetaCluster }).meta_cluster;
    } catch {
      return undefined;
    }
  }

  /** True when `/healthz` is ok and, on a cluster, the node knows a meta leader. */
  async healthy(): Promise<boolean> {
    try {
      const response = await fetch(`http://${this.network.host}:${this.monitorPort}/healthz`, { signal: AbortSignal.timeout(1000) });
      if (!response.ok) return false;
      if (this.clusterPort === 0) return true;
      const jsz = (await (
        await fetch(`http://${this.network.host}:${this.monitorPort}/jsz`, { signal: AbortSignal.timeout(1000) })
      ).json()) as {
        meta_cluster?: { leader?: string };
      };
      return typeof jsz.meta_cluster?.leader === "string" && jsz.meta_cluster.leader !== "";
    } catch {
      return false;
    }
  }
}

/** The nats-server configuration of one node. */
function nodeConfig(
  node: { name: string; port: number; clusterPort: number; monitorPort: number; storeDir: string; network: NodeNetwork },
  clusterName: string,
  routes: readonly string[],
  maxFileStore: string | undefined,
): string {
  const lines = [
    `server_name: ${node.name}`,
    `listen: ${node.network.host}:${node.port}`,
    `http: ${node.network.host}:${node.monitorPort}`,
    "max_payload: 1MB",
    `jetstream { store_dir: "${node.storeDir}"${maxFileStore === undefined ? "" : `, max_file_store: ${maxFileStore}`} }`,
  ];
  if (node.clusterPort !== 0) {
    lines.push(
      "cluster {",
      `  name: ${clusterName}`,
      `  listen: ${node.network.clusterHost}:${node.clusterPort}`,
      `  routes: [${routes.map((r) => `nats-route://${r}`).join(", ")}]`,
      "}",
    );
  }
  return lines.join("\n") + "\n";
}

/** How many times a start on ports chosen here is tried when a port was taken before its server bound it. */
const PORT_ATTEMPTS = 3;

/**
 * Starts `size` nats-servers (three by default) in one JetStream cluster on
 * free loopback ports, each with its own store under one folder, and waits
 * until every node is healthy and the cluster has a meta leader.
 *
 * A port found free may be taken before nats-server binds it: the OS hands
 * the same range to outgoing connections, and tests running beside this one
 * open many. When a server says so, and every port and the folder were
 * chosen here, the whole start is tried again on fresh ports in a fresh
 * folder.
 */
export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalNatsCluster> {
  const retryable = options.ports === undefined && options.dir === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options);
    } catch (e) {
      if (!retryable || attempt >= PORT_ATTEMPTS || !String((e as Error).message).includes("address already in use")) throw e;
      options.logger?.warn({ attempt }, "a port chosen for nats-server was taken before it bound it; starting again on fresh ports");
    }
  }
}

async function startClusterOnce(options: LocalClusterOptions): Promise<LocalNatsCluster> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`size must be a positive integer, got ${size}`);
  if (options.ports !== undefined && options.ports.length !== size)
    throw new RangeError(`ports: ${size} needed, got ${options.ports.length}`);
  const binary = options.binary ?? (await natsServerBinary());
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "leasehold-cluster-"));
  makeDirectory(dir);
  const clustered = size > 1;
  const choosePort = options.choosePort ?? freePort;
  const specs: { name: string; port: number; clusterPort: number; monitorPort: number; storeDir: string; network: NodeNetwork }[] = [];
  for (let i = 0; i < size; i++) {
    const name = `n${i + 1}`;
    specs.push({
      name,
      port: options.ports?.[i] ?? (await choosePort()),
      clusterPort: clustered ? await choosePort() : 0,
      monitorPort: await choosePort(),
      storeDir: join(dir, name, "store"),
      network: options.network?.(i) ?? LOOPBACK,
    });
  }
  const clusterName = options.name ?? `leasehold-${randomBytes(4).toString("hex")}`;
  const nodes = specs.map((spec) => {
    makeDirectory(spec.storeDir);
    const configFile = join(dir, spec.name, "server.conf");
    writeFileSync(
      configFile,
      nodeConfig(
        spec,
        clusterName,
        specs.filter((s) => s !== spec).map((s) => `${s.network.clusterHost}:${s.clusterPort}`),
        options.maxFileStore,
      ),
    );
    return new Node(
      spec.name,
      spec.port,
      spec.clusterPort,
      spec.monitorPort,
      spec.storeDir,
      spec.network,
      configFile,
      binary,
      options.logger,
    );
  });
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const cluster = new Cluster(nodes, dir, ownDir, readyTimeoutMs);
  for (const node of nodes) node.start();
  try {
    await cluster.waitReady();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}

/** One local nats-server with JetStream, restartable on the same port and store. */
export function startLocalNatsServer(options: Omit<LocalClusterOptions, "size"> = {}): Promise<LocalNatsCluster> {
  return startLocalCluster({ ...options, size: 1 });
}

class Cluster implements LocalNatsCluster {
  constructor(
    readonly nodes: readonly Node[],
    readonly dir: string,
    private readonly ownDir: boolean,
    private readonly readyTimeoutMs: number,
  ) {}

  get urls(): readonly string[] {
    return this.nodes.map((n) => n.url);
  }

  async kill(node: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.node(node).kill(signal);
  }

  async restart(node: number): Promise<void> {
    const n = this.node(node);
    if (n.running) await n.kill("SIGTERM");
    n.start();
    await this.waitReady();
  }

  async waitReady(timeoutMs = this.readyTimeoutMs): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const running = this.nodes.filter((n) => n.running);
    let nudgeAt = Date.now() + 10_000;
    for (;;) {
      const { ready, suspects } = await this.readiness(running);
      if (ready && (running.length < this.nodes.length || (await this.placesEveryReplica()))) return;
      if (Date.now() > nudgeAt && suspects.length > 0 && Date.now() + 8000 < deadline) {
        // Seen under load when three empty nodes start at once: two bootstrap the meta group and the
        // third never gets in touch with its leader, or follows it without becoming a peer. A restart
        // of that node makes it join.
        nudgeAt = Infinity;
        for (const n of suspects) {
          await n.kill("SIGTERM");
          n.start();
        }
      }
      if (Date.now() > deadline) {
        const views = await Promise.all(
          running.map(async (n) => `${n.name}: ${JSON.stringify(await n.metaCluster())}\n${n.logTail.slice(-600)}`),
        );
        throw new Error(
          `the nats-servers were not ready in time (JetStream healthy on each, every node a current peer of the meta leader, a stream placed on all):\n${views.join("\n")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Ready: every running node reports JetStream healthy and, on a cluster, the
   * meta leader counts every running node as a current, online peer (a meta leader
   * alone is not enough: a stream at three replicas is placed only then; the
   * caller then also places one, {@link placesEveryReplica}).
   * Otherwise the nodes that hold it up, when they can be told.
   */
  private async readiness(running: readonly Node[]): Promise<{ ready: boolean; suspects: Node[] }> {
    const healthy = await Promise.all(running.map((n) => n.healthy()));
    const unhealthy = running.filter((_, i) => !healthy[i]);
    for (const n of unhealthy) if (!n.running) throw new Error(`nats-server ${n.name} exited while starting:\n${n.logTail}`);
    if (unhealthy.length > 0) return { ready: false, suspects: unhealthy };
    if (this.nodes.length === 1) return { ready: true, suspects: [] };
    const meta = await this.leaderView(running);
    if (meta === undefined) return { ready: false, suspects: [] };
    // Current and not offline: a peer the leader has no word of yet cannot take a replica.
    const current = new Set((meta.replicas ?? []).filter((r) => r.current && r.offline !== true).map((r) => r.name));
    const behind = running.filter((n) => n.name !== meta.leader && !current.has(n.name));
    return { ready: behind.length === 0, suspects: behind };
  }

  /**
   * Whether a stream with a replica on every node can be placed now: a probe
   * stream (in memory, on a subject nothing else uses) made and deleted. The
   * meta group's view can call every peer current while the leader still
   * refuses such a placement for a moment ("no suitable peers for
   * placement, peer offline", seen in CI right after that view was ready);
   * ready means a user's R3 stream is placed at once.
   */
  private async placesEveryReplica(): Promise<boolean> {
    if (this.nodes.length === 1) return true;
    const name = `LEASEHOLD_READY_PROBE_${randomBytes(4).toString("hex")}`;
    try {
      const nc = await connect({ servers: [...this.urls], timeout: 2000, maxReconnectAttempts: 0, name: "leasehold-local-cluster" });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2000 });
        await jsm.streams.add({
          name,
          subjects: [`_leasehold_ready_probe.${name}`],
          storage: StorageType.Memory,
          num_replicas: this.nodes.length,
        });
        await jsm.streams.delete(name);
        return true;
      } finally {
        await nc.close();
      }
    } catch {
      return false; // not yet: the caller looks again until its deadline
    }
  }

  /**
   * The meta leader's own view of the group, if a running node has it: the
   * node that names itself leader (2.10 lists the peers only there; 2.11 and
   * later list them on every node, each as that node sees them).
   */
  private async leaderView(running: readonly Node[]): Promise<MetaCluster | undefined> {
    for (const node of running) {
      const meta = await node.metaCluster();
      if (meta?.replicas !== undefined && meta.leader === node.name) return meta;
    }
    return undefined;
  }

  async leaderOf(stream: string, timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      const servers = this.nodes.filter((n) => n.running).map((n) => n.url);
      try {
        const nc = await connect({ servers, timeout: 2000, maxReconnectAttempts: 0, name: "leasehold-local-cluster" });
        try {
          const jsm = await jetstreamManager(nc, { timeout: 2000 });
          const info = await jsm.streams.info(stream);
          const leader = info.cluster?.leader;
          const index = this.nodes.findIndex((n) => n.name === leader);
          // A single node reports no cluster: it leads every stream it has.
          if (this.nodes.length === 1) return 0;
          if (index >= 0) return index;
          last = new Error(`stream ${stream} has no leader yet`);
        } finally {
          await nc.close();
        }
      } catch (e) {
        last = e;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`no leader of stream ${stream} within ${timeoutMs} ms: ${(last as Error | undefined)?.message ?? "unknown"}`);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (n) => {
        const timer = setTimeout(() => void n.kill("SIGKILL"), 5000);
        await n.kill("SIGTERM");
        clearTimeout(timer);
      }),
    );
    if (this.ownDir) rmSync(this.dir, { recursive: true, force: true });
  }

  private node(index: number): Node {
    const n = this.nodes[index];
    if (n === undefined) throw new RangeError(`no node ${index} (cluster of ${this.nodes.length})`);
    return n;
  }
}
