/**
 * The body a host (or its agent) publishes on `<prefix>.loads.<host>`
 * (docs/protocol.md, "Host load"): `{load}`, a finite number `>= 0`, lower
 * is better. The service ignores any other body; this is the sending side.
 */

/** Is `load` a load the service takes (a finite number >= 0)? */
export function isHostLoad(load: unknown): load is number {
  return typeof load === "number" && Number.isFinite(load) && load >= 0;
}

/** The JSON body for `load`; a TypeError for a value the service would ignore. */
export function hostLoadBody(load: number): string {
  if (!isHostLoad(load)) throw new TypeError(`a host load is a finite number >= 0, got ${String(load)}`);
  return JSON.stringify({ load });
}
