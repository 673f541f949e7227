/**
 * `leasehold audit`: reads the event stream (needs only NATS) and checks
 * every invariant of the contract, printing each violation with its stream
 * sequence, actor and rule, then a summary. Exit 0 when clean, 1 on any
 * violation, 2 on a usage or connection error.
 */
import { Option, type Command } from "commander";
import { principalList } from "../contract/operators.ts";
import { DEFAULTS } from "../config.ts";
import { AUDIT_RULES, auditSource, type AuditOptions, type AuditProgress, type AuditSummary, type Violation } from "../tools/audit.ts";
import { auditInWorker } from "../tools/worker-read.ts";
import { SPLIT_FROM_CORES } from "../tools/split-audit.ts";
import { natsSource } from "../tools/stream-reader.ts";
import { cell } from "../tools/table.ts";
import { parseBounds, parseCount } from "../tools/time.ts";
import { addToolAction, examplesHelp } from "./options.ts";
import { terminalReadProgress } from "./progress.ts";
import { TOOL_THREADS_HELP, toolsOnTwoThreads, toolThreadsSetting } from "./tool-threads.ts";
import { visibleJson } from "../tools/table.ts";

/** Flags of `audit`. */
export interface AuditFlags {
  nats?: string;
  prefix: string;
  from?: string;
  to?: string;
  since?: string;
  until?: string;
  json?: boolean;
  progress?: boolean;
  cooldownMs: string;
  maxTtlMs: string;
  operators?: string;
}

/** Adds `audit` to the program. */
export function addAuditCommand(program: Command): void {
  const rules = Object.entries(AUDIT_RULES)
    .map(([id, text]) => `  ${id}\n      ${text}`)
    .join("\n");
  const command = program
    .command("audit")
    .description(
      "Read the whole event stream (or --from/--to) and check every invariant of the contract; print each violation with its " +
        "sequence, actor and rule, then a summary. Exit 0 when clean, 1 on any violation, 2 on a usage or connection error. Needs only NATS.",
    )
    .option(
      "--from <seq|instant>",
      "report violations from this stream sequence or RFC 3339 instant on (what comes before is still folded, silently)",
    )
    .option("--to <seq|instant>", "stop after this stream sequence, or after the last message stored at or before this instant")
    .option("--since <seq|instant>", "the same as --from")
    .option("--until <seq|instant>", "the same as --to")
    .option("--json", 'print each violation as a JSON line, then a {"summary": ...} line')
    .option("--progress", "report progress on stderr even when it is not a terminal")
    .addOption(
      new Option("--cooldown-ms <ms>", "the service's --cooldown-ms: how long an expired proxy lease still resolves for report")
        .env("LEASEHOLD_COOLDOWN_MS")
        .default(String(DEFAULTS.cooldownMs)),
    )
    .addOption(
      new Option("--max-ttl-ms <ms>", "the service's --max-ttl-ms: how far ahead of its event a lock lease may end")
        .env("LEASEHOLD_MAX_TTL_MS")
        .default(String(DEFAULTS.maxTtlMs)),
    )
    .addOption(
      new Option(
        "--operators <list>",
        "the service's --operators: principals that may act on any holder's lease (holder-principal rule)",
      ).env("LEASEHOLD_OPERATORS"),
    )
    .addHelpText("after", `\nRules checked:\n${rules}`)
    .addHelpText(
      "after",
      examplesHelp(
        "leasehold audit",
        "leasehold audit --from 2026-11-30T19:00:00Z --json",
        "leasehold audit --nats nats://10.0.0.5:4222 --creds ~/auditor.creds --max-ttl-ms 60000",
      ),
    )
    .addHelpText("after", TOOL_THREADS_HELP)
    .addHelpText("after", `With two threads on ${SPLIT_FROM_CORES} cores or more, the checks run on two workers, split by kind.`);
  addToolAction(
    command,
    (flags: AuditFlags): Omit<AuditOptions, "onViolation" | "onProgress"> => {
      toolThreadsSetting(); // a bad LEASEHOLD_TOOLS_THREADS is a usage error before connecting
      const names = [flags.from === undefined ? "--since" : "--from", flags.to === undefined ? "--until" : "--to"] as const;
      const bounds = parseBounds(flags.from ?? flags.since, flags.to ?? flags.until, Date.now, names);
      return {
        cooldownMs: parseCount(flags.cooldownMs, "--cooldown-ms", 1),
        maxTtlMs: parseCount(flags.maxTtlMs, "--max-ttl-ms", 1),
        operators: principalList(flags.operators ?? ""),
        fromSeq: bounds.sinceSeq,
        fromTime: bounds.sinceTime,
        toSeq: bounds.untilSeq,
        toTime: bounds.untilTime,
      };
    },
    async ({ nc, subjects, url }, options, flags) => {
      const source = natsSource(nc, subjects);
      const last = await source.lastSeq();
      const total = Math.min(options.toSeq ?? last, last);
      // On a terminal the shared progress line (events/s, ETA); --progress elsewhere writes a line every 10,000 messages.
      const line = terminalReadProgress("audit", total);
      const tty = process.stderr.isTTY;
      const showProgress = !tty && flags.progress === true;
      const started = Date.now();
      const progress = (p: AuditProgress) => {
        const rate = Math.round(p.read / Math.max(0.001, (Date.now() - started) / 1000));
        const line = `audit: ${p.read} of ${total} messages (${Math.floor((100 * p.seq) / Math.max(1, total))}%), ${p.violations} violations, ${rate} messages/s`;
        process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
      };
      let summary: AuditSummary;
      try {
        // On two threads the checks run on a worker while this one reads (src/tools/worker-read.ts).
        summary = await (toolsOnTwoThreads(toolThreadsSetting(), total) ? auditInWorker : auditSource)(
          source,
          subjects,
          {
            ...options,
            onViolation: (v) => {
              line?.clear();
              console.log(flags.json === true ? visibleJson(JSON.stringify(violationJson(v))) : violationLine(v));
            },
            onProgress: showProgress ? progress : undefined,
          },
          line === undefined ? undefined : (m) => line.seen(m.seq),
        );
      } finally {
        line?.done();
      }
      console.log(
        flags.json === true ? visibleJson(JSON.stringify({ summary })) : summaryLines(summary, subjects.eventStream, url).join("\n"),
      );
      return summary.violations > 0 ? 1 : 0;
    },
  );
}

/** A violation as one line: `#<seq> <at> <kind> <id> <rule>: <what>`. */
export function violationLine(v: Violation): string {
  const who = v.actor === null ? v.subject : `${v.actor.kind} ${cell(v.actor.id)}`;
  return `#${v.seq} ${v.at} ${who} ${v.rule}: ${v.message.replace(/\s*\n\s*/g, " ")}`;
}

function violationJson(v: Violation): Record<string, unknown> {
  return {
    seq: v.seq,
    at: v.at,
    subject: v.subject,
    kind: v.actor?.kind ?? null,
    id: v.actor?.id ?? null,
    rule: v.rule,
    message: v.message,
  };
}

function summaryLines(s: AuditSummary, stream: string, url: string): string[] {
  const actors = s.actors.proxy + s.actors.host + s.actors.route + s.actors.lock;
  const seconds = s.elapsedMs / 1000;
  const lines = [
    "",
    `audit of ${stream} on ${url}${s.checked > 0 ? `, sequences ${s.firstSeq}..${s.lastSeq}` : ""}`,
    `  messages read  ${s.read}${s.checked !== s.read ? ` (${s.checked} checked)` : ""}`,
    `  actors         ${actors} (proxy ${s.actors.proxy}, host ${s.actors.host}, route ${s.actors.route}, lock ${s.actors.lock})`,
    `  time           ${seconds.toFixed(1)} s (${Math.round(s.read / Math.max(seconds, 0.001))} messages/s)`,
    `  violations     ${s.violations}`,
  ];
  const width = Math.max(0, ...Object.keys(s.byRule).map((r) => r.length));
  for (const [rule, n] of Object.entries(s.byRule)) lines.push(`    ${rule.padEnd(width)}  ${n}`);
  return lines;
}
