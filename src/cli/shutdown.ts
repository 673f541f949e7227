/**
 * How `leasehold serve` ends: one ordered stop (the service, then the NATS
 * connection, then the local nats-server: the reverse of start-up), started
 * by SIGTERM, SIGINT, the death of the npm process that launched it, or a
 * fatal error, and bounded as a whole: a watchdog (unref'd, so it never keeps
 * the process alive by itself) logs what was left and exits when the budget
 * runs out, whatever NATS does.
 */
import type { Logger } from "pino";

/** One thing to stop. */
interface Step {
  readonly name: string;
  /** Gets the milliseconds it may take; not awaited longer than that. */
  readonly run: (ms: number) => Promise<void>;
  readonly maxMs: number;
}

/** What the shutdown needs from its surroundings (the real process by default; tests pass fakes). */
export interface ShutdownOptions {
  readonly logger: Logger;
  /** The whole stop, watchdog included (10 s). */
  readonly budgetMs?: number;
  readonly exit?: (code: number) => void;
  readonly now?: () => number;
}

/** The ordered, bounded stop of a process. */
export class Shutdown {
  private readonly steps: Step[] = [];
  private readonly budgetMs: number;
  private readonly exit: (code: number) => void;
  private readonly now: () => number;
  private stopped: Promise<void> | undefined;
  private current: string | undefined;

  constructor(private readonly options: ShutdownOptions) {
    this.budgetMs = options.budgetMs ?? 10_000;
    this.exit = options.exit ?? ((code) => process.exit(code));
    this.now = options.now ?? Date.now;
  }

  /** True once a stop has begun. */
  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  /**
   * Registers something to stop; steps run in the reverse order of
   * registration, each for at most `maxMs` (and the budget left). Added while
   * a stop is under way, it is stopped before that stop ends.
   */
  add(name: string, run: (ms: number) => Promise<void>, maxMs = this.budgetMs): void {
    this.steps.push({ name, run, maxMs });
  }

  /** Starts the stop on SIGTERM and SIGINT (exit 0). Install before anything is spawned. */
  installSignalHandlers(): void {
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => void this.begin(signal, 0));
  }

  /**
   * Stops (exit 0) once the parent process is gone. npm (`npx leasehold
   * serve`, `npm start`) exits on SIGTERM without passing it on, which would
   * otherwise leave this process running.
   */
  followParent(intervalMs = 500): void {
    const parent = process.ppid;
    const timer = setInterval(() => {
      if (process.ppid !== parent) void this.begin("parent process exited", 0);
    }, intervalMs);
    timer.unref();
  }

  /** Runs every step (once, however often it is called) and exits with `code`. */
  begin(reason: string, code: number): Promise<void> {
    this.stopped ??= this.run(reason, code);
    return this.stopped;
  }

  private async run(reason: string, code: number): Promise<void> {
    const { logger } = this.options;
    const deadline = this.now() + this.budgetMs;
    // A failed start-up has said what went wrong in one line already.
    const log = (fields: object, msg: string) => (code === 0 ? logger.info(fields, msg) : logger.debug(fields, msg));
    log({ reason }, "stopping");
    const watchdog = setTimeout(() => {
      const left = [this.current, ...this.steps.map((s) => s.name)].filter((n) => n !== undefined);
      logger.warn({ left, budgetMs: this.budgetMs }, "stop took too long; exiting anyway");
      this.exit(code);
    }, this.budgetMs);
    watchdog.unref();
    for (let step = this.steps.pop(); step !== undefined; step = this.steps.pop()) {
      const ms = Math.max(0, Math.min(step.maxMs, deadline - this.now()));
      this.current = step.name;
      const outcome = await withDeadline(step.run(ms), ms);
      if (outcome !== "done") logger.warn({ step: step.name, ms, outcome }, "a stop step did not finish; going on");
      this.current = undefined;
    }
    clearTimeout(watchdog);
    log({ code }, "stopped");
    this.exit(code);
  }
}

async function withDeadline(work: Promise<void>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"timed out">((r) => (timer = setTimeout(() => r("timed out"), ms)));
  try {
    return await Promise.race([work.then(() => "done" as const), late]);
  } catch (e) {
    return `failed: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}
