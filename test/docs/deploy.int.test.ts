/**
 * docs/operations.md's deploy block ("Least privilege"), run as written from a
 * fresh clone: `nats-config --out` (which must leave the clone's own nats.conf
 * alone and print the next commands with nats-server's path), the passwords
 * exported, nats-server started as the block starts it, `serve` as the
 * service user, a named client's `call` and the auditor's `audit`. Only the
 * port and the store folder are changed, to free ones.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { freePort, ROOT, run, tempDir, waitForLog, waitListening, type Proc } from "../cli/cli-process.ts";
import { freshClone, inClone } from "./fresh-clone.ts";

/** The logical lines (continuations joined, comments dropped) of the shell block after `heading`. */
function deployBlock(heading: string): string[] {
  const doc = readFileSync(join(ROOT, "docs/operations.md"), "utf8");
  const at = doc.indexOf(heading);
  expect(at, `operations.md has "${heading}"`).toBeGreaterThanOrEqual(0);
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(at))![1]!;
  return block
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"));
}

describe("docs/operations.md's deploy block", () => {
  it("runs as written from a fresh clone: config, nats-server, serve, a named client, the auditor", async () => {
    const clone = freshClone();
    const shipped = readFileSync(join(clone, "nats.conf"), "utf8");
    const port = await freePort();
    const store = tempDir("deploy-store");
    const env: Record<string, string> = {};
    const lines = deployBlock("## Least privilege").map((l) =>
      l.replaceAll("0.0.0.0:4222", `127.0.0.1:${port}`).replaceAll(":4222", `:${port}`).replaceAll("/var/lib/nats/jetstream", store),
    );
    expect(lines.map((l) => l.split(/\s+/).find((w) => !w.includes("=")))).toEqual(["npx", "export", '"$(bash', "npx", "npx", "npx"]);
    const background: Proc[] = [];
    for (const line of lines) {
      if (line.startsWith("export ")) {
        for (const [, name] of line.matchAll(/(\w+)=\.\.\./g)) env[name!] = `pw${randomBytes(12).toString("hex")}`;
        continue;
      }
      const command = inClone(clone, line.replace(/\s*&$/, ""));
      const proc = run("bash", ["-c", command], { cwd: clone, env });
      if (!line.endsWith("&")) {
        const { code } = await proc.exited;
        expect(code, `${line}\n${proc.stderr()}`).toBe(0);
        if (line.includes(" nats-config ")) {
          expect(readFileSync(join(clone, "nats.conf"), "utf8"), "the clone's own nats.conf").toBe(shipped);
          // The next commands it prints name the nats-server to run and the file written, by absolute path.
          expect(proc.stderr()).toContain(`${process.env.NATS_SERVER_BIN ?? "nats-server"} -c ${join(clone, "leasehold-nats.conf")}`);
        }
        if (line.includes(" call ")) expect(JSON.parse(proc.stdout())).toMatchObject({ lease: { name: "reports", owner: "alice" } });
        continue;
      }
      background.push(proc);
      if (line.includes(" serve ")) await waitForLog(proc, "leasehold serving");
      else await waitListening(port, proc);
    }
    // The service stops cleanly before its server does.
    for (const proc of background.reverse()) {
      proc.child.kill("SIGTERM");
      await proc.exited;
    }
  }, 120_000);

  it("never lets a redirect replace the clone's own nats.conf", async () => {
    const clone = freshClone();
    const shipped = readFileSync(join(clone, "nats.conf"), "utf8");
    const proc = run("bash", ["-c", inClone(clone, "npx leasehold nats-config --client alice > nats.conf")], { cwd: clone });
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr()).toMatch(/^leasehold nats-config: stdout is the shipped .*nats\.conf.*--out <file>/);
    expect(readFileSync(join(clone, "nats.conf"), "utf8")).toBe(shipped);
    const forced = run("bash", ["-c", inClone(clone, "npx leasehold nats-config --out nats.conf")], { cwd: clone });
    expect((await forced.exited).code).toBe(2);
    expect(forced.stderr()).toMatch(/--out nats\.conf is the shipped nats\.conf.*--force/);
  }, 60_000);
});
