/** The package version, reported by `$SRV.INFO` and `--version`. */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
/** Version from package.json. */
export const VERSION: string = (require("../package.json") as { version: string }).version;
