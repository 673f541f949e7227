/**
 * Every `$ npx leasehold ...` sample of the per-kind pages and tools.md, run
 * in order against a fresh service (its own nats-server, an empty stream)
 * and compared with what the command prints (test/docs/samples.ts says how
 * run-to-run values are matched). `SAMPLES_RENDER=1` writes what the commands
 * printed into the pages instead of failing.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, run, startLocalServe } from "../cli/cli-process.ts";
import { readFileSync } from "node:fs";
import { compare, Learned, pageSamples, printed, render } from "./samples.ts";

const PAGES = ["docs/locks.md", "docs/proxies.md", "docs/routes.md", "docs/tools.md"];

describe("the docs' samples", () => {
  it.each(PAGES)(
    "%s: each one is what the command prints",
    async (page) => {
      const path = join(ROOT, page);
      const samples = pageSamples(readFileSync(path, "utf8"));
      expect(samples.length, `${page} has samples`).toBeGreaterThan(0);
      const { cwd, url } = await startLocalServe("samples");
      const port = Number(new URL(url).port);
      const env = { LEASEHOLD_NATS: url };
      const learned = new Learned();
      const differences: string[] = [];
      const outputs: string[][] = [];
      for (const sample of samples) {
        const command = learned
          .command(sample.command)
          .replace(/^npx leasehold/, `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}`);
        const proc = run("bash", ["-c", command], { cwd, env });
        await proc.exited;
        // The page's service is the README's, on 127.0.0.1:4222.
        const actual = printed(proc.stdout(), proc.stderr()).map((l) => l.replaceAll(`127.0.0.1:${port}`, "127.0.0.1:4222"));
        outputs.push(actual);
        differences.push(...compare(sample, actual, learned));
      }
      if (process.env.SAMPLES_RENDER === "1")
        render(
          path,
          samples,
          outputs.map((lines) => lines.map((l) => learned.restore(l))),
        );
      else expect(differences.join("\n\n")).toBe("");
    },
    180_000,
  );
});
