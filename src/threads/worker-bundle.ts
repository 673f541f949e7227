/**
 * A worker thread's entry when leasehold runs from a checkout (src/, through
 * tsx). Loading the fold worker's forty modules through tsx's loader costs the
 * worker about 0.8 s (1.1 s of CPU) before it folds anything, and during a
 * whole-stream read the worker is the slower thread, so that start adds to
 * the whole read. Bundled into one module by esbuild (tsx's own compiler),
 * the worker loads in less than half that. The bundle is written under
 * node_modules/.cache/leasehold/ (so its imports of zod and the NATS client
 * resolve as they do from src/) with a manifest of the sources it was made
 * from; it is used again while none of them is newer than it (as `make`
 * decides), and made again otherwise. Each checkout has its own manifest
 * (named by its entry's path): checkouts that share one node_modules never
 * run each other's bundles. When bundling fails, the worker starts through
 * tsx's loader (tsx-worker.mjs): slower, the same results.
 */
import { createHash, randomUUID } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const TSX_ENTRY = new URL("./tsx-worker.mjs", import.meta.url);
const CACHE_DIR = new URL("../../node_modules/.cache/leasehold/", import.meta.url);

/**
 * Starts a worker thread on `entry` (a module of src/, `.ts`): from dist/ as
 * built (the `.js` beside the running code); from a checkout, its bundle, or
 * tsx's loader when the bundle cannot be made.
 */
export async function startWorker(entry: URL, workerData: object): Promise<Worker> {
  if (!entry.pathname.endsWith(".ts")) throw new Error(`a worker entry names its source (.ts): ${entry.href}`);
  if (!import.meta.url.endsWith(".ts")) return new Worker(new URL(entry.href.replace(/\.ts$/, ".js")), { workerData });
  const source = await workerEntryFromSource(entry);
  return source === TSX_ENTRY
    ? new Worker(TSX_ENTRY, { workerData: { ...workerData, tsxEntry: entry.href } })
    : new Worker(source, { workerData });
}

/** The URL to start `entry` from, from a checkout: its bundle, or tsx's entry when it cannot be made. */
export async function workerEntryFromSource(entry: URL): Promise<URL> {
  try {
    return await bundleOf(entry, CACHE_DIR);
  } catch {
    return TSX_ENTRY;
  }
}

/** What the cache directory says of an entry's last bundle: its file name and the sources it was made from. */
interface Manifest {
  readonly bundle: string;
  readonly inputs: readonly string[];
}

/** `entry` and what it imports from the checkout, as one module in `cacheDir`: the last bundle while it is fresh, else a new one. */
export async function bundleOf(entry: URL, cacheDir: URL): Promise<URL> {
  const key = hash(fileURLToPath(entry));
  const manifestFile = new URL(`manifest-${key}.json`, cacheDir);
  const manifest = await readFile(manifestFile, "utf8")
    .then((text) => JSON.parse(text) as Manifest)
    .catch(() => undefined);
  if (manifest !== undefined && (await fresh(manifest, cacheDir))) return new URL(manifest.bundle, cacheDir);
  const made = await makeBundle(entry, cacheDir, key);
  await replaceFile(manifestFile, JSON.stringify(made));
  // The bundle of sources since edited is never loaded again by this checkout.
  if (manifest !== undefined && manifest.bundle !== made.bundle) await rm(new URL(manifest.bundle, cacheDir), { force: true });
  return new URL(made.bundle, cacheDir);
}

/** True when the manifest's bundle exists and none of its sources is newer. */
async function fresh(manifest: Manifest, cacheDir: URL): Promise<boolean> {
  const made = await stat(new URL(manifest.bundle, cacheDir)).catch(() => undefined);
  if (made === undefined) return false;
  const sources = await Promise.all(manifest.inputs.map((input) => stat(input).catch(() => undefined)));
  return sources.every((s) => s !== undefined && s.mtimeMs <= made.mtimeMs);
}

async function makeBundle(entry: URL, cacheDir: URL, key: string): Promise<Manifest> {
  const { build } = await import("esbuild");
  const built = await build({
    entryPoints: [fileURLToPath(entry)],
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
  const bundle = `${basename(fileURLToPath(entry), ".ts")}-${key}-${hash(text)}.mjs`;
  await mkdir(cacheDir, { recursive: true });
  await replaceFile(new URL(bundle, cacheDir), text);
  return { bundle, inputs: Object.keys(built.metafile.inputs).map((input) => resolve(input)) };
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** Writes the whole file, then renames it into place: two commands starting at once never load half a file. */
async function replaceFile(file: URL, text: string): Promise<void> {
  const partial = new URL(`${file.href}.${randomUUID()}.partial`);
  await writeFile(partial, text);
  await rename(partial, file);
}
