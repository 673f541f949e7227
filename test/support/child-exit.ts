/**
 * When a spawned process has ended with all its output read. A child's
 * 'exit' can come while its pipes still hold its last lines (a `--help` read
 * at 'exit' on a loaded machine missed its examples), so this waits for
 * 'close'; a grandchild that keeps the pipes open does not hold it past 2 s
 * after the exit.
 */
import type { ChildProcess } from "node:child_process";

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

const PIPES_AFTER_EXIT_MS = 2000;

export function exitOf(child: ChildProcess): Promise<ChildExit> {
  return new Promise((resolve) => {
    child.once("close", (code, signal) => resolve({ code, signal }));
    child.once("exit", (code, signal) => setTimeout(() => resolve({ code, signal }), PIPES_AFTER_EXIT_MS).unref());
  });
}
