// The project's layers and what each may import (docs/design.md, "Layers").
// Each folder of src/ may import itself and the folders listed for it; any
// other import of the project's code is an error, and so is an import cycle.
const SHARED = ["contract", "events", "threads", "projections", "actors", "transport"];
const ALLOWED = {
  contract: [],
  events: ["contract"],
  threads: ["events"],
  projections: ["contract", "events", "threads"],
  actors: ["contract", "events", "threads", "projections"],
  transport: ["contract", "events", "projections", "actors"],
  host: [...SHARED, "config.ts"],
  session: [...SHARED, "config.ts"],
  proxy: [...SHARED, "config.ts"],
  route: [...SHARED, "host", "config.ts"],
  lock: [...SHARED, "session", "config.ts"],
  service: [...SHARED, "host", "session", "proxy", "route", "lock", "config.ts", "version.ts"],
  tools: [...SHARED, "host", "session", "proxy", "route", "lock", "service", "config.ts"],
  http: ["contract", "events", "projections", "tools", "host", "session", "proxy", "route", "lock", "version.ts"],
  security: ["contract", "events"],
  client: ["contract"],
  cluster: [],
  cli: [...SHARED, "host", "session", "proxy", "route", "lock", "service", "tools", "http", "security", "cluster", "config.ts", "version.ts"],
  "config.ts": ["contract"],
  "version.ts": [],
  "index.ts": ["client", "contract", "version.ts"],
};

const ALL = Object.keys(ALLOWED);

/** `import-x/no-restricted-paths` zones: for each part of src/, every part it may not import. */
export const layerZones = ALL.map((part) => ({
  target: `./src/${part}`,
  from: ALL.filter((other) => other !== part && !ALLOWED[part].includes(other)).map((other) => `./src/${other}`),
  message: `${part} may import only ${ALLOWED[part].length === 0 ? "itself" : ALLOWED[part].join(", ")} (layers: docs/design.md)`,
}));

/** The plugin, resolver settings and rules that enforce the layers (eslint.config.js applies them to src/). */
export function layerRules(importX) {
  return {
    plugins: { "import-x": importX },
    settings: {
      // Imports name their `.ts` files; dependencies are parsed as TypeScript, so cycles through them are seen.
      "import-x/resolver-next": [importX.createNodeResolver({ extensions: [".ts", ".js"] })],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
    },
    rules: {
      "import-x/no-restricted-paths": ["error", { zones: layerZones }],
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
    },
  };
}
