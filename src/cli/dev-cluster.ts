/**
 * `leasehold dev-cluster`: three nats-servers in one JetStream cluster on
 * loopback, for trying `serve --replicas 3` (and for fault drills) on one
 * machine. Prints each node's ports and store folder, and stops the servers
 * on SIGINT (Ctrl-C) or SIGTERM.
 */
import { Option, type Command } from "commander";
import { startLocalCluster, type LocalNatsCluster } from "../cluster/local-cluster.ts";
import { examplesHelp } from "./options.ts";

/** Flags of `dev-cluster`. */
export interface DevClusterFlags {
  nodes: string;
  dir?: string;
  ports?: string;
}

/** Adds `dev-cluster` to the program. */
export function addDevClusterCommand(program: Command): void {
  program
    .command("dev-cluster")
    .description(
      "Start a local JetStream cluster (three nats-servers on 127.0.0.1, each with its own store folder) and keep it running until Ctrl-C or SIGTERM. " +
        "Prints the URLs to give `leasehold serve --nats <url,url,url> --replicas 3`.",
    )
    .addOption(new Option("--nodes <n>", "how many nats-servers").default("3"))
    .option("--dir <path>", "folder for the nodes' configs and stores, kept after exit (default: a temporary folder, removed on exit)")
    .option("--ports <p1,p2,p3>", "client ports, one per node (default: free ports)")
    .addHelpText("after", examplesHelp("leasehold dev-cluster", "leasehold dev-cluster --dir ./cluster --ports 4301,4302,4303"))
    .action((flags: DevClusterFlags) => devCluster(flags));
}

async function devCluster(flags: DevClusterFlags): Promise<void> {
  const size = Number(flags.nodes);
  const ports = flags.ports?.split(",").map((p) => Number(p.trim()));
  if (!Number.isInteger(size) || size < 1 || size > 7) return usage(`--nodes: an integer from 1 to 7, got ${JSON.stringify(flags.nodes)}`);
  if (ports !== undefined && (ports.length !== size || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))) {
    return usage(`--ports: ${size} port numbers separated by commas, got ${JSON.stringify(flags.ports)}`);
  }
  let cluster: LocalNatsCluster;
  try {
    cluster = await startLocalCluster({
      size,
      ...(flags.dir === undefined ? {} : { dir: flags.dir }),
      ...(ports === undefined ? {} : { ports }),
    });
  } catch (e) {
    console.error(`leasehold dev-cluster: ${(e as Error).message}`);
    process.exitCode = 1;
    return;
  }
  for (const node of cluster.nodes) {
    console.log(
      `${node.name}  ${node.url}  cluster port ${node.clusterPort || "-"}  monitor http://127.0.0.1:${node.monitorPort}  store ${node.storeDir}  pid ${node.pid}`,
    );
  }
  const urls = cluster.urls.join(",");
  console.log(
    `\nready. run the service on it with:\n  npx leasehold serve --nats ${urls} --replicas ${Math.min(size, 3)}\nCtrl-C stops the servers.`,
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping the nats-servers`);
    await cluster.stop();
    console.log(flags.dir === undefined ? "stopped (stores removed)" : `stopped (stores kept in ${cluster.dir})`);
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

function usage(message: string): void {
  console.error(`leasehold dev-cluster: ${message}`);
  process.exitCode = 2;
}
