/**
 * `mkdir -p` that always ends. Node's recursive mkdir retries forever when a
 * folder's parent exists but refuses it with ENOENT, as procfs does
 * (`--data-dir /proc/x` spun a core with no output); this walks down from
 * the deepest folder that exists, one plain mkdir per missing level, so any
 * refusal is thrown once.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Creates `path` and any missing parents; throws the system's error (ENOENT, EACCES, ENOTDIR, ...) when one cannot be made. */
export function makeDirectory(path: string): void {
  const missing: string[] = [];
  let dir = resolve(path);
  while (!existsSync(dir)) {
    missing.unshift(dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (e) {
      // Made meanwhile by someone else: fine, if it is a folder.
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(level).isDirectory()) throw e;
    }
  }
  if (!statSync(resolve(path)).isDirectory())
    throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), { code: "ENOTDIR" });
}
