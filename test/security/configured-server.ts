/**
 * A nats-server started from a configuration text (as `leasehold nats-config`
 * or the shipped nats.conf gives it) in a temporary folder, on the free port
 * its `listen: 127.0.0.1:-1` lets it pick, read back from its ports file.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, inject, vi } from "vitest";

/** A running server and how to stop it (removing its folder). */
export interface ConfiguredServer {
  readonly url: string;
  /** Its folder: the configuration, ports file and whatever store the configuration puts there. */
  readonly dir: string;
  stop(): Promise<void>;
}

/** Starts nats-server on `configure(dir)`'s text (`dir` is its fresh folder), with `env` added to the environment. */
export async function startConfiguredServer(
  configure: (dir: string) => string,
  env: Record<string, string> = {},
): Promise<ConfiguredServer> {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-conf-"));
  writeFileSync(join(dir, "nats.conf"), configure(dir));
  const server = spawn(inject("natsServerBinary"), ["-c", join(dir, "nats.conf"), "--ports_file_dir", dir], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: "ignore",
  });
  const gone = new Promise((resolve) => server.once("exit", resolve));
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill("SIGTERM");
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  let url = "";
  try {
    await vi.waitFor(
      () => {
        const ports = readdirSync(dir).find((f) => f.endsWith(".ports"));
        expect(ports).toBeDefined();
        url = (JSON.parse(readFileSync(join(dir, ports!), "utf8")) as { nats: string[] }).nats[0]!;
      },
      { timeout: 10_000, interval: 20 },
    );
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, dir, stop };
}
