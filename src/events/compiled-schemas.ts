/**
 * Plain predicates compiled from the event schemas, so that decoding a valid
 * event costs a few type checks instead of a zod parse (which builds a result
 * object, an issue list per field and a copy of every object it passes).
 *
 * A compiled predicate is only ever a shortcut to "accepted": it answers true
 * only for a value its zod schema accepts, and false for everything else,
 * including values it is not sure about (an object with a `__proto__` or
 * `constructor` key, anything not made by `JSON.parse`). A false sends the
 * value to zod, which gives the verdict and its reason; so decoding accepts
 * and rejects exactly what the schemas do (test/events/compiled-schemas.unit.test.ts).
 *
 * Only the schema constructs the events use compile; any other (a refinement
 * other than {@link instant}, a transform, a union, a catch-all) makes
 * {@link compileSchema} answer null, and the caller keeps zod for that schema.
 */
import type { z } from "zod";
import { instant } from "./fields.ts";
import { isUtcInstant } from "./envelope.ts";

/** True only when the schema it was compiled from accepts `value` (a value `JSON.parse` returned). */
export type Accepts = (value: unknown) => boolean;

/** A compiled schema, and whether it accepts `undefined` (a required key must then be present). */
interface Compiled {
  readonly accepts: Accepts;
  readonly acceptsUndefined: boolean;
}

/** What this file reads of a zod 4 schema's definition. */
interface Def {
  readonly type: string;
  readonly checks?: readonly { readonly _zod: { readonly def: CheckDef } }[];
  readonly shape?: Readonly<Record<string, z.ZodType>>;
  readonly catchall?: unknown;
  readonly innerType?: z.ZodType;
  readonly element?: z.ZodType;
  readonly keyType?: z.ZodType;
  readonly valueType?: z.ZodType;
  readonly mode?: string;
}

interface CheckDef {
  readonly check: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly format?: string;
  readonly value?: number;
  readonly inclusive?: boolean;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;
const valuesOf = (schema: z.ZodType): ReadonlySet<unknown> | undefined =>
  (schema as unknown as { _zod: { values?: ReadonlySet<unknown> } })._zod.values;

/** The refinement of {@link instant}, the same function. */
const isInstant: Accepts = (s) => typeof s === "string" && isUtcInstant(s);

/** An object `JSON.parse` made, without the keys that zod treats specially. */
function isPlainJsonObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, "constructor")
  );
}

/** Compiles `schema` to a predicate, or null when it uses a construct this file does not know. */
export function compileSchema(schema: z.ZodType): Accepts | null {
  return compile(schema)?.accepts ?? null;
}

function compile(schema: z.ZodType): Compiled | null {
  if (schema === instant) return { accepts: isInstant, acceptsUndefined: false };
  const def = defOf(schema);
  const checks = (def.checks ?? []).map((c) => c._zod.def);
  switch (def.type) {
    case "string":
      return compileString(checks);
    case "number":
      return compileNumber(checks);
    case "boolean":
      return checks.length === 0 ? { accepts: (v) => typeof v === "boolean", acceptsUndefined: false } : null;
    case "literal":
    case "enum": {
      const values = valuesOf(schema);
      if (checks.length > 0 || values === undefined || values.has(undefined)) return null;
      return { accepts: (v) => values.has(v), acceptsUndefined: false };
    }
    case "unknown":
      return checks.length === 0 ? { accepts: () => true, acceptsUndefined: true } : null;
    case "optional": {
      const inner = def.innerType === undefined || checks.length > 0 ? null : compile(def.innerType);
      if (inner === null) return null;
      const accepts = inner.accepts;
      return { accepts: (v) => v === undefined || accepts(v), acceptsUndefined: true };
    }
    case "nullable": {
      const inner = def.innerType === undefined || checks.length > 0 ? null : compile(def.innerType);
      if (inner === null) return null;
      const accepts = inner.accepts;
      return { accepts: (v) => v === null || accepts(v), acceptsUndefined: inner.acceptsUndefined };
    }
    case "array": {
      const element = def.element === undefined || checks.length > 0 ? null : compile(def.element);
      if (element === null) return null;
      const accepts = element.accepts;
      return {
        accepts: (v) => {
          if (!Array.isArray(v)) return false;
          for (let i = 0; i < v.length; i++) if (!accepts(v[i])) return false;
          return true;
        },
        acceptsUndefined: false,
      };
    }
    case "object":
      return checks.length === 0 && def.catchall === undefined && def.shape !== undefined ? compileObject(def.shape) : null;
    case "record":
      return checks.length === 0 ? compileRecord(def) : null;
    default:
      return null;
  }
}

function compileString(checks: readonly CheckDef[]): Compiled | null {
  let min = 0;
  let max = Infinity;
  for (const c of checks) {
    if (c.check === "min_length" && c.minimum !== undefined) min = Math.max(min, c.minimum);
    else if (c.check === "max_length" && c.maximum !== undefined) max = Math.min(max, c.maximum);
    else return null;
  }
  if (min === 0 && max === Infinity) return { accepts: (v) => typeof v === "string", acceptsUndefined: false };
  return { accepts: (v) => typeof v === "string" && v.length >= min && v.length <= max, acceptsUndefined: false };
}

function compileNumber(checks: readonly CheckDef[]): Compiled | null {
  let safeInt = false;
  let low: CheckDef | undefined;
  for (const c of checks) {
    if (c.check === "number_format" && c.format === "safeint") safeInt = true;
    else if (c.check === "greater_than" && low === undefined && typeof c.value === "number" && typeof c.inclusive === "boolean") low = c;
    else return null;
  }
  const bound = low?.value ?? -Infinity;
  const inRange: (n: number) => boolean = low?.inclusive === false ? (n) => n > bound : (n) => n >= bound;
  const accepts: Accepts = safeInt
    ? (v) => typeof v === "number" && Number.isSafeInteger(v) && inRange(v)
    : (v) => typeof v === "number" && Number.isFinite(v) && inRange(v);
  return { accepts, acceptsUndefined: false };
}

function compileObject(shape: Readonly<Record<string, z.ZodType>>): Compiled | null {
  const fields: { key: string; accepts: Accepts; mustBePresent: boolean }[] = [];
  for (const key of Object.keys(shape)) {
    if (key === "__proto__") return null;
    const field = compile(shape[key]!);
    if (field === null) return null;
    const optional = defOf(shape[key]!).type === "optional";
    // zod wants a required key present even when its schema would take undefined.
    fields.push({ key, accepts: field.accepts, mustBePresent: !optional && field.acceptsUndefined });
  }
  return {
    accepts: (v) => {
      if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
      const o = v as Record<string, unknown>;
      for (const f of fields) {
        if (f.mustBePresent && !(f.key in o)) return false;
        if (!f.accepts(o[f.key])) return false;
      }
      return true;
    },
    acceptsUndefined: false,
  };
}

function compileRecord(def: Def): Compiled | null {
  if (def.keyType === undefined || def.valueType === undefined || def.mode !== undefined) return null;
  const key = defOf(def.keyType);
  if (key.type !== "string" || (key.checks ?? []).length > 0) return null;
  const value = compile(def.valueType);
  if (value === null) return null;
  const accepts = value.accepts;
  return {
    accepts: (v) => {
      if (!isPlainJsonObject(v)) return false;
      for (const k in v) {
        // zod skips a `__proto__` key (and leaves it out of what it returns): let zod decide.
        if (k === "__proto__" || !accepts(v[k])) return false;
      }
      return true;
    },
    acceptsUndefined: false,
  };
}
