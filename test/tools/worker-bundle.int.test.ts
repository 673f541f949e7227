/**
 * From a checkout the fold worker starts from one bundled module: made once,
 * used again while its sources are unchanged, made again when one is newer,
 * and a worker started from it folds.
 */
import { readFile, stat, utimes } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MemoryEventLog, Subjects } from "../../src/events/index.ts";
import { logSource, replayInWorker } from "../../src/tools/index.ts";
import { workerEntryFromSource } from "../../src/tools/worker-bundle.ts";

describe("the fold worker's bundle", () => {
  it("is reused while its sources are unchanged and made again when one is newer", async () => {
    const first = await workerEntryFromSource();
    expect(first.pathname).toMatch(/node_modules\/\.cache\/leasehold\/fold-worker-[0-9a-f]{16}\.mjs$/);
    const manifest = JSON.parse(await readFile(new URL("fold-worker.json", first), "utf8")) as { inputs: string[] };
    expect(manifest.inputs).toContain(fileURLToPath(new URL("../../src/tools/fold-worker.ts", import.meta.url)));

    // Older than its sources: made again (the same text, so the same name, written anew).
    const past = new Date(Date.now() - 3600_000);
    await utimes(first, past, past);
    const remade = await workerEntryFromSource();
    expect(remade.href).toBe(first.href);
    expect((await stat(remade)).mtimeMs).toBeGreaterThan(past.getTime() + 1000);

    // Newer than every source: used as it is.
    const mtime = (await stat(remade)).mtimeMs;
    expect((await workerEntryFromSource()).href).toBe(first.href);
    expect((await stat(remade)).mtimeMs).toBe(mtime);

    // The worker it starts folds (an empty stream: nothing, at sequence 0).
    const view = await replayInWorker(logSource(new MemoryEventLog()), new Subjects("bundle"));
    expect(view.seq).toBe(0);
  });
});
