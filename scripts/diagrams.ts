/**
 * Writes the lock statechart's diagram and decision table into docs/locks.md,
 * between its `generated:lock-machine` markers, from the machine itself
 * (`npm run diagrams`). A unit test fails while the doc differs from this.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { lockDocAsGenerated } from "../test/support/machine-docs.ts";

const path = fileURLToPath(new URL("../docs/locks.md", import.meta.url));
const before = readFileSync(path, "utf8");
const after = await lockDocAsGenerated(before, path);
writeFileSync(path, after);
console.log(after === before ? "docs/locks.md: the lock machine section is current" : "docs/locks.md: the lock machine section rewritten");
