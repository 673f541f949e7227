/**
 * `leasehold audit` against a real JetStream stream. Every crafted violation
 * (test/tools/support/violations.ts) is written straight into one stream,
 * bypassing the service; the audit finds each one at its sequence, names its
 * rule and actor, and exits 1. A clean history from a simulated workload,
 * written the same way, passes with exit 0 (timed). Usage and connection
 * errors exit 2 with a message.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Subjects } from "../../src/contract/subjects.ts";
import { AUDIT_RULES, auditStream, type Violation } from "../../src/tools/audit.ts";
import { connectNats, natsUrl, uniquePrefix } from "../support/nats.ts";
import { openEventLog, publishRaw, runCli } from "./support/cli.ts";
import { CRAFT_AUDIT, scenarios, type Scenario } from "./support/violations.ts";

/** The audit flags of the crafted histories' settings (CRAFT_AUDIT). */
const CRAFT_FLAGS = ["--cooldown-ms", String(CRAFT_AUDIT.cooldownMs), "--operators", CRAFT_AUDIT.operators.join(",")];
import { simulateWorkload } from "./support/workload.ts";

const connections: NatsConnection[] = [];
afterEach(async () => {
  for (const nc of connections.splice(0)) await nc.close();
});
async function connection(): Promise<NatsConnection> {
  const nc = await connectNats();
  connections.push(nc);
  return nc;
}

/** Every scenario written into one stream; each break's expected sequence. */
interface CraftedStream {
  readonly prefix: string;
  readonly expected: { seq: number; rule: string; subject: string }[];
}

let crafted: CraftedStream;

beforeAll(async () => {
  const nc = await connectNats();
  try {
    const prefix = uniquePrefix();
    const subjects = new Subjects(prefix);
    const all: Scenario[] = scenarios("jet stream");
    const expected: CraftedStream["expected"] = [];
    let offset = 0;
    for (const s of all) {
      for (const i of s.breaks) expected.push({ seq: offset + i + 1, rule: s.rule, subject: s.messages[i]!.subject(subjects) });
      offset += s.messages.length;
    }
    const last = await publishRaw(
      nc,
      prefix,
      all.flatMap((s) => s.messages.map((m) => ({ subject: m.subject(subjects), payload: m.payload }))),
    );
    expect(last).toBe(offset);
    crafted = { prefix, expected };
  } finally {
    await nc.close();
  }
});

describe("leasehold audit on JetStream", () => {
  it("finds every crafted violation at its sequence, with its rule and subject, and nothing else", async () => {
    const nc = await connection();
    const subjects = new Subjects(crafted.prefix);
    const log = await openEventLog(nc, crafted.prefix);
    const violations: Violation[] = [];
    const summary = await auditStream(log.readStream(), subjects, { ...CRAFT_AUDIT, onViolation: (v) => violations.push(v) });
    expect(violations.map((v) => ({ seq: v.seq, rule: v.rule, subject: v.subject }))).toEqual(crafted.expected);
    const rules = new Set(violations.map((v) => v.rule));
    // Every rule but subject-sequence, which JetStream itself makes impossible to store (unit-tested on a crafted iterable).
    expect(Object.keys(AUDIT_RULES).filter((r) => !rules.has(r as Violation["rule"]))).toEqual(["subject-sequence"]);
    expect(summary.violations).toBe(crafted.expected.length);
  });

  it("as a command: prints each violation (sequence, actor, rule), a summary by rule, and exits 1", async () => {
    const { code, stdout } = await runCli(["audit", "--nats", natsUrl(), "--prefix", crafted.prefix, ...CRAFT_FLAGS]);
    expect(code).toBe(1);
    const lines = stdout.split("\n").filter((l) => l.startsWith("#"));
    expect(lines).toHaveLength(crafted.expected.length);
    for (const [i, e] of crafted.expected.entries()) {
      expect(lines[i]).toMatch(
        new RegExp(`^#${e.seq} \\S+Z (lock|proxy|host|route|session|${crafted.prefix}\\.events\\.widget)\\S* .*${e.rule}: `),
      );
    }
    expect(lines.find((l) => l.includes("lock-two-holders"))).toMatch(
      /^#\d+ 2026-05-01T00:00:05\.000Z lock "jet stream\.\d+\/lock" lock-two-holders: acquired by w2 \(generation 2\) while w1 holds generation 1 until 2026-05-01T00:00:10\.000Z$/,
    );
    expect(stdout).toContain(`  violations     ${crafted.expected.length}\n`);
    const counts = new Map<string, number>();
    for (const e of crafted.expected) counts.set(e.rule, (counts.get(e.rule) ?? 0) + 1);
    for (const [rule, n] of counts) expect(stdout).toMatch(new RegExp(`\\n    ${rule} +${n}\\n?`));
    expect(stdout).toMatch(/messages read {2}\d+\n/);
  });

  it("--json prints the violations as JSON lines and a summary line; --from/--to narrow what is reported", async () => {
    const json = await runCli(["audit", "--nats", natsUrl(), "--prefix", crafted.prefix, ...CRAFT_FLAGS, "--json"]);
    expect(json.code).toBe(1);
    const objects = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = objects.pop() as { summary: { violations: number } };
    expect(summary.summary.violations).toBe(crafted.expected.length);
    expect(objects.map((o) => [o.seq, o.rule])).toEqual(crafted.expected.map((e) => [e.seq, e.rule]));

    const first = crafted.expected[0]!.seq;
    const second = crafted.expected.find((e) => e.seq > first)!.seq;
    const narrow = await runCli([
      "audit",
      "--nats",
      natsUrl(),
      "--prefix",
      crafted.prefix,
      "--json",
      "--from",
      String(first + 1),
      "--to",
      String(second),
    ]);
    expect(narrow.code).toBe(1);
    expect(
      narrow.stdout
        .trim()
        .split("\n")
        .slice(0, -1)
        .map((l) => (JSON.parse(l) as { seq: number }).seq),
    ).toEqual([second]);
  });

  it("passes a clean simulated history written into JetStream (exit 0), with progress on stderr", async () => {
    const events = 20_000;
    const sim = await simulateWorkload({ events, seed: 3 });
    const nc = await connection();
    const prefix = uniquePrefix();
    const published = Date.now();
    const from = `${sim.subjects.prefix}.events.`;
    await publishRaw(
      nc,
      prefix,
      sim.log.messages.slice(0, events).map((m) => ({ subject: `${prefix}.events.${m.subject.slice(from.length)}`, payload: m.payload })),
    );
    const publishMs = Date.now() - published;

    const subjects = new Subjects(prefix);
    const log = await openEventLog(nc, prefix);
    const violations: Violation[] = [];
    const summary = await auditStream(log.readStream(), subjects, {
      cooldownMs: sim.config.cooldownMs,
      maxTtlMs: sim.config.maxTtlMs,
      onViolation: (v) => violations.push(v),
    });
    console.log(`audit of ${summary.read} events read from JetStream: ${summary.elapsedMs} ms (publishing them took ${publishMs} ms)`);
    expect(violations.slice(0, 5)).toEqual([]);
    expect(summary).toMatchObject({ read: events, violations: 0 });

    const cli = await runCli([
      "audit",
      "--nats",
      natsUrl(),
      "--prefix",
      prefix,
      "--progress",
      "--cooldown-ms",
      String(sim.config.cooldownMs),
    ]);
    expect(cli.code, cli.stdout + cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/messages read {2}20000\n/);
    expect(cli.stdout).toContain("  violations     0");
    expect(cli.stdout).toMatch(/actors {9}\d+ \(proxy 8, host 6, route 30, lock 40\)/);
    expect(cli.stderr).toContain("audit: 10000 of 20000 messages (50%), 0 violations");
    expect(cli.stderr).toContain("audit: 20000 of 20000 messages (100%), 0 violations");
  });

  it("exits 2 with a message for an unknown prefix, an unreachable server, and a bad flag", async () => {
    const missing = await runCli(["audit", "--nats", natsUrl(), "--prefix", uniquePrefix()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /leasehold audit: no event stream T\w+_EVENTS on nats:\/\/.*: no leasehold service has run with --prefix t\w+ there/,
    );

    const down = await runCli(["audit", "--nats", "nats://127.0.0.1:1"]);
    expect(down.code).toBe(2);
    expect(down.stderr).toMatch(/leasehold audit: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);

    const bad = await runCli(["audit", "--nats", natsUrl(), "--from", "yesterday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--from: expected an RFC 3339 instant");
  });

  it("takes the connection from LEASEHOLD_NATS and LEASEHOLD_PREFIX, as serve does", async () => {
    const { code, stdout } = await runCli(["audit", "--json", ...CRAFT_FLAGS], {
      LEASEHOLD_NATS: natsUrl(),
      LEASEHOLD_PREFIX: crafted.prefix,
    });
    expect(code).toBe(1);
    expect(stdout.trim().split("\n")).toHaveLength(crafted.expected.length + 1);
  });
});
