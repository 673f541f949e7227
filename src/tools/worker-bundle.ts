/**
 * The fold worker's entry when leasehold runs from a checkout (src/, through
 * tsx). Loading the worker's forty modules through tsx's loader costs the
 * worker about 0.8 s (1.1 s of CPU) before it folds anything, and during a
 * whole-stream read the worker is the slower thread, so that start adds to
 * the whole read. Bundled into one module by esbuild (tsx's own compiler),
 * the worker loads in about a third of that. The bundle is written under
 * node_modules/.cache/leasehold/ (so its imports of zod and the NATS client
 * resolve as they do from src/) with a manifest of the sources it was made
 * from; it is used again while none of them is newer than it (as `make`
 * decides), and made again otherwise. When bundling fails, the worker starts
 * through tsx's loader as before (fold-worker-tsx.mjs): slower, the same
 * results.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SOURCE_ENTRY = new URL("./fold-worker.ts", import.meta.url);
const TSX_ENTRY = new URL("./fold-worker-tsx.mjs", import.meta.url);
const CACHE_DIR = new URL("../../node_modules/.cache/leasehold/", import.meta.url);
const PREFIX = "fold-worker-";
const MANIFEST = new URL("fold-worker.json", CACHE_DIR);

/** The URL to start the fold worker from, from a checkout: the bundle, or tsx's entry when it cannot be made. */
export async function workerEntryFromSource(): Promise<URL> {
  try {
    return await bundle();
  } catch {
    return TSX_ENTRY;
  }
}

/** What the cache directory says of the last bundle: its file name and the sources it was made from. */
interface Manifest {
  readonly bundle: string;
  readonly inputs: readonly string[];
}

async function bundle(): Promise<URL> {
  return (await freshBundle()) ?? (await makeBundle());
}

/** The last bundle, when it exists and none of its sources changed since it was made. */
async function freshBundle(): Promise<URL | undefined> {
  const manifest = await readFile(MANIFEST, "utf8")
    .then((text) => JSON.parse(text) as Manifest)
    .catch(() => undefined);
  if (manifest === undefined) return undefined;
  const file = new URL(manifest.bundle, CACHE_DIR);
  const made = await stat(file).catch(() => undefined);
  if (made === undefined) return undefined;
  const sources = await Promise.all(manifest.inputs.map((input) => stat(input).catch(() => undefined)));
  return sources.every((s) => s !== undefined && s.mtimeMs <= made.mtimeMs) ? file : undefined;
}

async function makeBundle(): Promise<URL> {
  const { build } = await import("esbuild");
  const built = await build({
    entryPoints: [fileURLToPath(SOURCE_ENTRY)],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const text = built.outputFiles[0]!.text;
  const name = `${PREFIX}${createHash("sha256").update(text).digest("hex").slice(0, 16)}.mjs`;
  const manifest: Manifest = { bundle: name, inputs: Object.keys(built.metafile.inputs).map((input) => resolve(input)) };
  await mkdir(CACHE_DIR, { recursive: true });
  // Written whole, then renamed into place: two commands starting at once never load half a file.
  await replaceFile(new URL(name, CACHE_DIR), text);
  await replaceFile(MANIFEST, JSON.stringify(manifest));
  // Bundles of sources since edited are never loaded again.
  for (const old of await readdir(CACHE_DIR)) {
    if (old.startsWith(PREFIX) && old.endsWith(".mjs") && old !== name) await rm(new URL(old, CACHE_DIR), { force: true });
  }
  return new URL(name, CACHE_DIR);
}

async function replaceFile(file: URL, text: string): Promise<void> {
  const partial = new URL(`${file.href}.${randomUUID()}.partial`);
  await writeFile(partial, text);
  await rename(partial, file);
}
