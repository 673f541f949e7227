// The fold worker's entry when leasehold runs from a checkout (src/, through
// tsx): a loader registered on the main thread does not reach worker threads
// on Node 20, so this registers tsx's in the worker, then loads the worker.
import { register } from "tsx/esm/api";

register();
await import("./fold-worker.ts");
