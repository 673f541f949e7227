#!/usr/bin/env node
// Entry point of the `leasehold` command. In a checkout (src/ present) it runs
// the TypeScript sources through tsx's loader, so that `npm ci` is all a
// checkout needs and a stale dist/ never hides a change; the published
// package has no src/ and runs the built dist/.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const source = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source);
} else {
  await import(fileURLToPath(new URL("../dist/cli/main.js", import.meta.url)));
}
