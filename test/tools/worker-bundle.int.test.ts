/**
 * From a checkout the fold worker starts from one bundled module: made once,
 * used again while its sources are unchanged, made again when one is newer;
 * checkouts sharing one cache (one node_modules) never get each other's
 * bundle; and a worker started from it folds.
 */
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { logSource } from "../../src/tools/stream-reader.ts";
import { replayInWorker } from "../../src/tools/worker-read.ts";
import { bundleOf, workerEntryFromSource } from "../../src/threads/worker-bundle.ts";

/** The tools' fold worker, as src/tools/worker-read.ts starts it. */
const FOLD_WORKER = new URL("../../src/tools/fold-worker.ts", import.meta.url);

let scratch: string | undefined;
afterEach(async () => {
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
  scratch = undefined;
});

/** A checkout's entry (`<dir>/<name>/entry.ts`) importing one module of its own that says `word`. */
async function checkout(dir: string, name: string, word: string): Promise<{ entry: URL; part: string }> {
  const part = join(dir, name, "part.ts");
  await mkdir(join(dir, name), { recursive: true });
  await writeFile(part, `export const word: string = ${JSON.stringify(word)};\n`);
  await writeFile(join(dir, name, "entry.ts"), `import { word } from "./part.ts";\nconsole.log(word);\n`);
  return { entry: pathToFileURL(join(dir, name, "entry.ts")), part };
}

describe("the fold worker's bundle", () => {
  it("is reused while its sources are unchanged, made again when one is newer, and the worker it starts folds", async () => {
    expect((await workerEntryFromSource(FOLD_WORKER)).pathname).toMatch(
      /node_modules\/\.cache\/leasehold\/fold-worker-[0-9a-f]{16}-[0-9a-f]{16}\.mjs$/,
    );

    // The rest on a cache of this test's own: the checkout's is shared with the test files running beside this one.
    scratch = await mkdtemp(join(tmpdir(), "leasehold-bundle-"));
    const cache = pathToFileURL(join(scratch, "cache") + "/");
    const first = await bundleOf(FOLD_WORKER, cache);
    // Older than its sources (dated 2001: an hour ago is newer than every source of a checkout made before that):
    // made again (the same text, so the same name, written anew).
    const past = new Date("2001-01-01T00:00:00Z");
    await utimes(first, past, past);
    const remade = await bundleOf(FOLD_WORKER, cache);
    expect(remade.href).toBe(first.href);
    expect((await stat(remade)).mtimeMs).toBeGreaterThan(past.getTime() + 1000);

    // Newer than every source: used as it is.
    const mtime = (await stat(remade)).mtimeMs;
    expect((await bundleOf(FOLD_WORKER, cache)).href).toBe(first.href);
    expect((await stat(remade)).mtimeMs).toBe(mtime);

    const view = await replayInWorker(logSource(new MemoryEventLog()), new Subjects("bundle"));
    expect(view.seq).toBe(0);
  });

  it("keeps one bundle per checkout in a shared cache, and an edit remakes only its own checkout's", async () => {
    scratch = await mkdtemp(join(tmpdir(), "leasehold-bundle-"));
    const cache = pathToFileURL(join(scratch, "cache") + "/");
    const a = await checkout(scratch, "a", "from a");
    const b = await checkout(scratch, "b", "from b");
    const bundleA = await bundleOf(a.entry, cache);
    const bundleB = await bundleOf(b.entry, cache);
    expect(bundleA.href).not.toBe(bundleB.href);
    expect(await readFile(bundleA, "utf8")).toContain("from a");
    expect(await readFile(bundleB, "utf8")).toContain("from b");

    // An edit in a (its part made newer than its bundle): a's bundle is made again and the old one removed; b's stays.
    await writeFile(a.part, `export const word: string = "edited a";\n`);
    const future = new Date(Date.now() + 60_000);
    await utimes(a.part, future, future);
    const editedA = await bundleOf(a.entry, cache);
    expect(await readFile(editedA, "utf8")).toContain("edited a");
    await expect(stat(bundleA)).rejects.toThrow();
    expect((await bundleOf(b.entry, cache)).href).toBe(bundleB.href);
    expect(await readFile(bundleB, "utf8")).toContain("from b");
  });
});
