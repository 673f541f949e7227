/**
 * The examples print what docs/client.md shows under each.
 * examples/conversation-router.ts tells its story on a stream that has seen
 * other work (a route holding a lease on one of its hosts, the README's
 * hosts), and again when run a second time: the same lines, but for the
 * sequence numbers of its durable commands. The lock worker and the proxy
 * scraper, on a fresh service, print the same lines but for what the clock
 * decides (how long the keeper held on and noticed the loss, the cooldowns'
 * ends) and the scraper's run tag, the same on every line.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, run, startLocalServe } from "../cli/cli-process.ts";

/** The output block docs/client.md shows under the example's heading. */
function documented(heading: string): string {
  const doc = readFileSync(join(ROOT, "docs/client.md"), "utf8");
  const at = doc.indexOf(heading);
  expect(at, heading).toBeGreaterThanOrEqual(0);
  return /\n\n```\n([\s\S]*?)```/.exec(doc.slice(at))![1]!;
}

const withoutSeqs = (text: string) => text.replace(/#\d+/g, "#n");

describe("examples/conversation-router.ts", () => {
  it("prints what client.md shows, on a used stream and when run again", async () => {
    const { cwd, url } = await startLocalServe("router");
    const env = { LEASEHOLD_NATS: url, NATS_URL: url };
    // Other work first: the README's host and route, and another route holding a lease on one of the example's hosts.
    for (const [op, body] of [
      ["host.set", '{"host":"gpu-1","healthy":true}'],
      ["route.acquire", '{"route":"chat","fp":"c-42","model":"m","candidates":["gpu-1"]}'],
      ["host.set", '{"host":"demo-gpu-1","healthy":true}'],
      ["route.acquire", '{"route":"batch","fp":"","model":"m","candidates":["demo-gpu-1"]}'],
    ] as const) {
      const call = run(process.execPath, [BIN, "call", op, body], { cwd, env });
      expect((await call.exited).code, call.stderr()).toBe(0);
    }
    const shown = withoutSeqs(documented("### A router that places conversations"));
    for (const round of [1, 2]) {
      const example = run(process.execPath, ["--import", "tsx", join(ROOT, "examples/conversation-router.ts")], { env });
      expect((await example.exited).code, example.stderr()).toBe(0);
      expect(withoutSeqs(example.stdout()), `run ${round}`).toBe(shown);
    }
  }, 120_000);
});

describe("examples/lock-worker.ts and examples/proxy-scraper.ts", () => {
  it("print what client.md shows, but for the clock's figures and the run's tag", async () => {
    const { url } = await startLocalServe("examples");
    const env = { LEASEHOLD_NATS: url, NATS_URL: url };
    const runExample = async (file: string) => {
      const example = run(process.execPath, ["--import", "tsx", join(ROOT, "examples", file)], { env });
      expect((await example.exited).code, example.stderr()).toBe(0);
      return example.stdout();
    };
    const timings = (text: string) => text.replace(/(still holds it after|onLost after) \d+ ms/g, "$1 <n> ms");
    expect(timings(await runExample("lock-worker.ts"))).toBe(timings(documented("### A worker that takes a lock")));
    const scraped = await runExample("proxy-scraper.ts");
    const shown = documented("### A scraper that leases proxies");
    const tag = (text: string) => /^registered ([0-9a-z]+)-fast/.exec(text)?.[1] ?? "no tag";
    const instants = (text: string) => text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<instant>");
    expect(instants(scraped)).toBe(instants(shown.replaceAll(`${tag(shown)}-`, `${tag(scraped)}-`)));
  }, 120_000);
});
