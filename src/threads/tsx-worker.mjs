// A worker thread's entry when leasehold runs from a checkout (src/, through
// tsx) and its bundle cannot be made: a loader registered on the main thread
// does not reach worker threads on Node 20, so this registers tsx's in the
// worker, then loads the worker's own entry (`workerData.tsxEntry`).
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import(workerData.tsxEntry);
