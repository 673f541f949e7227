/**
 * Starts one real nats-server (>= 2.10, from scripts/nats-server.sh) for the
 * integration tier: a free loopback port chosen by the server (`port: -1`,
 * read back from its ports file), a temporary JetStream store, and a hard
 * stop of the test run if the server dies underneath it.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { natsServerBinary } from "../../src/cluster/nats-server-binary.ts";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    natsServerBinary: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const binary = await natsServerBinary();
  const dir = mkdtempSync(join(tmpdir(), "leasehold-nats-"));
  writeFileSync(
    join(dir, "server.conf"),
    ["listen: 127.0.0.1:-1", `ports_file_dir: "${dir}"`, "max_payload: 1MB", `jetstream { store_dir: "${join(dir, "js")}" }`].join("\n"),
  );
  const child = spawn(binary, ["-c", join(dir, "server.conf")], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  let stopping = false;
  child.once("exit", (code, signal) => {
    if (stopping) return;
    // Fail fast: every integration test would time out one by one otherwise.
    process.stderr.write(`\nnats-server died during the tests (code ${code}, signal ${signal}):\n${stderr}\n`);
    process.exit(1);
  });

  const deadline = Date.now() + 15_000;
  let url: string | undefined;
  while (url === undefined) {
    const ports = readdirSync(dir).find((f) => f.endsWith(".ports"));
    if (ports !== undefined) {
      const parsed = JSON.parse(readFileSync(join(dir, ports), "utf8")) as { nats?: string[] };
      url = parsed.nats?.[0];
    }
    if (url === undefined) {
      if (Date.now() > deadline) throw new Error(`nats-server did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  project.provide("natsUrl", url);
  project.provide("natsServerBinary", binary);

  return async () => {
    stopping = true;
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  };
}
