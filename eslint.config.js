// Type-checked linting: floating promises are errors, and
// library code logs through pino, never console (the CLI may print).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import importX from "eslint-plugin-import-x";
import { layerRules } from "./eslint.layers.js";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "node_modules/",
      ".tools/",
      ".leasehold/",
      "coverage/",
      "bin/",
      "eslint.config.js",
      "eslint.layers.js",
      "stryker.config.mjs",
      ".stryker-tmp/",
      ".mutation/",
      "reports/",
      // Plain JS, for checkouts only: registers tsx in the tools' worker thread (see its comment).
      "src/threads/tsx-worker.mjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "error",
    },
  },
  {
    // Dependencies point one way: each layer imports only those below it, and nothing imports in a circle.
    files: ["src/**/*.ts"],
    ...layerRules(importX),
  },
  { files: ["src/cli/**", "bench/**", "examples/**", "scripts/**", "test/**"], rules: { "no-console": "off" } },
  {
    files: ["test/**", "bench/**"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
);
