/**
 * Every `$ npx leasehold` sample of the per-kind pages and tools.md, run
 * in order against a fresh service (its own nats-server, an empty stream)
 * and compared with what the command prints (test/docs/samples.ts says how
 * run-to-run values are matched). `SAMPLES_RENDER=1` writes what the commands
 * printed into the pages instead of failing, with the pages' own ids and
 * instants where they were learned; `SAMPLES_RENDER=run` writes one run as it
 * was, its commands' ids and instants too.
 *
 * The steps a page asks for before a block (`<!-- samples: <step> ... -->`):
 * `restart` stops the service (SIGTERM) and starts it again on the same
 * stream with its clock two minutes on (the service's clock test hook), so a
 * page can show what a restart keeps and what expired meanwhile without
 * waiting; `forged-stream` writes forged histories straight into the stream
 * `FORGED_EVENTS` of a scratch nats-server (the page's `127.0.0.1:4333`),
 * bypassing the service, for the audit to find.
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, restartLocalServe, run, startLocalServe, type LocalServe } from "../cli/cli-process.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { CLOCK_OFFSET_VARIABLE } from "../../src/cli/clock-offset.ts";
import { connectNats, natsUrl } from "../support/nats.ts";
import { publishRaw } from "../tools/support/cli.ts";
import { scenarios } from "../tools/support/violations.ts";
import { compare, Learned, pageSamples, printed, printedAsIs, render } from "./samples.ts";

const PAGES = ["docs/locks.md", "docs/proxies.md", "docs/routes.md", "docs/tools.md"];

/** The README's service listens on 4222; the page's scratch nats-server on 4333. */
const SERVE_PORT = 4222;
const SCRATCH_PORT = 4333;
/** How far the restarted service's clock is moved on: past every 60 s lease the pages grant, within every cooldown. */
const RESTART_LATER_MS = 120_000;
/** The rules of the forged histories tools.md audits (test/tools/support/violations.ts has one history per rule). */
const FORGED_RULES = new Set([
  "event-parses",
  "proxy-over-capacity",
  "proxy-report-unknown-lease",
  "route-new-on-draining-host",
  "lock-two-holders",
]);

/** Writes the forged histories into `forged`'s event stream on the test nats-server, replacing what it held. */
async function writeForgedStream(): Promise<void> {
  const nc = await connectNats();
  try {
    const subjects = new Subjects("forged");
    await (await jetstreamManager(nc)).streams.delete(subjects.eventStream).catch(() => false);
    const chosen = scenarios("demo").filter((s) => FORGED_RULES.has(s.rule));
    expect(chosen.map((s) => s.rule).sort()).toEqual([...FORGED_RULES].sort());
    await publishRaw(
      nc,
      "forged",
      chosen.flatMap((s) => s.messages.map((m) => ({ subject: m.subject(subjects), payload: m.payload }))),
    );
  } finally {
    await nc.close();
  }
}

describe("the docs' samples", () => {
  it.each(PAGES)(
    "%s: each one is what the command prints",
    async (page) => {
      const path = join(ROOT, page);
      const samples = pageSamples(readFileSync(path, "utf8"));
      expect(samples.length, `${page} has samples`).toBeGreaterThan(0);
      let serve: LocalServe = await startLocalServe("samples");
      const ports = new Map([[SERVE_PORT, Number(new URL(serve.url).port)]]);
      const learned = new Learned();
      const differences: string[] = [];
      const outputs: string[][] = [];
      const commands: string[] = [];
      for (const sample of samples) {
        if (sample.before === "restart") serve = await restartLocalServe(serve, { [CLOCK_OFFSET_VARIABLE]: String(RESTART_LATER_MS) });
        else if (sample.before === "forged-stream") {
          await writeForgedStream();
          ports.set(SCRATCH_PORT, Number(new URL(natsUrl()).port));
        } else expect(sample.before, `a step this test knows before ${sample.command}`).toBeUndefined();
        const sent = learned.command(sample.command);
        commands.push(sent);
        let command = sent.replace(/^npx leasehold/, `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}`);
        for (const [shown, real] of ports) command = command.replaceAll(`127.0.0.1:${shown}`, `127.0.0.1:${real}`);
        const proc = run("bash", ["-c", command], { cwd: serve.cwd, env: { LEASEHOLD_NATS: serve.url } });
        const { code } = await proc.exited;
        if (sample.exit !== undefined && code !== sample.exit)
          differences.push(`$ ${sample.command}\n  exited ${code}, the page says ${sample.exit}`);
        const pagePorts = (line: string) =>
          [...ports].reduce((l, [shown, real]) => l.replaceAll(`127.0.0.1:${real}`, `127.0.0.1:${shown}`), line);
        const actual = printed(proc.stdout(), proc.stderr()).map(pagePorts);
        outputs.push(printedAsIs(proc.stdout(), proc.stderr()).map(pagePorts));
        differences.push(...compare(sample, actual, learned));
      }
      if (process.env.SAMPLES_RENDER === "run") render(path, samples, outputs, commands);
      else if (process.env.SAMPLES_RENDER === "1")
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
