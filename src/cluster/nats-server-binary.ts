/**
 * Where a nats-server comes from for everything that runs one locally (the
 * CLI's `serve` and `dev-cluster`, tests, benchmarks): the package's
 * `scripts/nats-server.sh`, which may fetch one into the user's cache folder.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (where nats.conf and scripts/ live). */
export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** No usable nats-server could be found or fetched; `exitCode` 2 is the CLI's usage exit, which its error reporting reads. */
export class NoNatsServerError extends Error {
  override readonly name = "NoNatsServerError";
  readonly exitCode = 2;
}

/**
 * Prints the path of a usable nats-server (>= 2.10) through
 * `scripts/nats-server.sh`, which may fetch one into the user's cache folder;
 * its progress lines are passed to `note`.
 */
export async function natsServerBinary(note: (line: string) => void = () => undefined): Promise<string> {
  const child = spawn("bash", [join(PROJECT_ROOT, "scripts/nats-server.sh")], { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let partial = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
    const lines = (partial + c.toString()).split("\n");
    partial = lines.pop() ?? "";
    // Progress, and a NATS_SERVER_BIN set but passed over (whoever set it expects that binary to run).
    for (const line of lines)
      if (/fetching|downloaded|installed|waiting|ignoring/i.test(line)) note(line.replace(/^nats-server\.sh: /, ""));
  });
  const code = await new Promise<number | null>((done) => {
    child.once("error", () => done(-1));
    child.once("close", (c) => done(c));
  });
  const path = stdout.trim();
  if (code !== 0 || path === "") {
    const last = stderr
      .trim()
      .split("\n")
      .slice(-3)
      .join(" ")
      .replace(/nats-server\.sh: /g, "");
    throw new NoNatsServerError(`no usable nats-server (2.10 or newer): ${last || `scripts/nats-server.sh exited ${code}`}`);
  }
  return path;
}
