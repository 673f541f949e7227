// The project's layers and what each may import (docs/design.md, "Layers").
// Each folder of src/ may import itself and the folders listed for it; any
// other import of the project's code is an error, and so is an import cycle.
/** Kinds: each folder holds one kind's commands, events, state, decision, endpoints and wiring. */
const KINDS = ["host", "session", "proxy", "route", "lock"];
const SHARED = ["contract", "events", "threads", "projections", "actors", "transport"];
const ALLOWED = {
  contract: [],
  events: ["contract"],
  threads: ["events"],
  projections: ["contract", "events", "threads"],
  actors: ["contract", "events", "threads", "projections"],
  transport: ["contract", "events", "projections", "actors", "config.ts"],
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
  cli: [
    ...SHARED,
    "host",
    "session",
    "proxy",
    "route",
    "lock",
    "service",
    "tools",
    "http",
    "security",
    "cluster",
    "config.ts",
    "version.ts",
  ],
  "config.ts": ["contract"],
  "version.ts": [],
  "index.ts": ["client", "contract", "version.ts"],
};

const ALL = Object.keys(ALLOWED);

/**
 * Files of a kind that a lower part may import all the same: the decoder
 * (src/events/decode.ts) validates every kind's events, so it reads each
 * kind's event schemas (which import nothing above `events`).
 */
const EXCEPT = {
  events: Object.fromEntries(KINDS.map((kind) => [kind, ["./events.ts"]])),
};

/** `import-x/no-restricted-paths` zones: for each part of src/, every part it may not import. */
export const layerZones = ALL.flatMap((part) =>
  ALL.filter((other) => other !== part && !ALLOWED[part].includes(other)).map((other) => ({
    target: `./src/${part}`,
    from: `./src/${other}`,
    ...(EXCEPT[part]?.[other] ? { except: EXCEPT[part][other] } : {}),
    message: `${part} may import only ${ALLOWED[part].length === 0 ? "itself" : ALLOWED[part].join(", ")} (layers: docs/design.md)`,
  })),
);

/** A kind that uses another (a lock reads sessions, a route places on hosts) goes through that kind's `index.ts`, never its other files. */
export const kindZones = KINDS.flatMap((kind) =>
  ALLOWED[kind]
    .filter((other) => KINDS.includes(other))
    .map((other) => ({
      target: `./src/${kind}`,
      from: `./src/${other}`,
      except: ["./index.ts"],
      message: `${kind} may use ${other} only through src/${other}/index.ts (no kind imports another's internals)`,
    })),
);

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
      "import-x/no-restricted-paths": ["error", { zones: [...layerZones, ...kindZones] }],
      "import-x/no-cycle": ["error", { ignoreExternal: true }],
    },
  };
}
