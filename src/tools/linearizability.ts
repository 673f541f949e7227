/**
 * A linearizability checker for histories of invoke/return pairs, after
 * Wing & Gong's search with Lowe's memoisation, split per key as Porcupine
 * does (operations on different keys never constrain each other, so each
 * key's sub-history is checked alone).
 *
 * A history is linearizable when every operation can be given one instant
 * (its linearization point) between its invocation and its return such that
 * applying the operations in the order of those instants to a sequential
 * model yields exactly the outputs the clients saw. An operation whose
 * outcome the client never learned (its request timed out) has no return:
 * it may have taken effect at any instant after its invocation, or never.
 *
 * Unlike a plain WGL checker, the models here may depend on time (a lock
 * lease expires at an instant), so the search also carries the instant of
 * the last linearization point and each step chooses the earliest instant in
 * the operation's window that its model allows. Earliest is never worse for
 * what follows: later points only move later, and an expiry that must have
 * happened narrows the lease's interval the same way at any later instant.
 *
 * Longer than 400 lines on purpose: the search and the lock model it was
 * written for (below the line) are read together, since the model's
 * earliest-instant steps are what make the search sound for leases.
 */

/** One operation of a history. */
export interface Operation<I, O> {
  /** Unique within the history (reported back in results). */
  readonly id: number;
  /** The partition: operations on different keys are checked apart. */
  readonly key: string;
  readonly input: I;
  /** What the client saw; undefined when it never learned the outcome. */
  readonly output: O | undefined;
  /** When the request was sent (ms, any clock shared by every client and the service). */
  readonly invokeAt: number;
  /** When the answer arrived; null when none did (the outcome is unknown). */
  readonly returnAt: number | null;
}

/** A state an operation may lead to, and the instant its model chose for it. */
export interface Step<S> {
  readonly state: S;
  readonly at: number;
}

/** A sequential specification. */
export interface Model<S, I, O> {
  /** The state of a key before any operation. */
  init(key: string): S;
  /**
   * Every state `input` can lead to from `state` when it takes effect at an
   * instant in `[from, to]` (to may be Infinity), and the output matches
   * `output` (undefined: any output; then list only the outcomes that change
   * the state, the checker adds "never took effect" itself). An empty list
   * means the operation cannot be placed here.
   */
  step(state: S, input: I, output: O | undefined, from: number, to: number): readonly Step<S>[];
  /** A string equal for equal states (memoisation). */
  hash(state: S): string;
}

/** The verdict on one key. */
export interface KeyResult {
  readonly key: string;
  /** true: linearizable; false: not; "unknown": the search ran out of its step budget. */
  readonly ok: boolean | "unknown";
  readonly operations: number;
  /** Search steps spent. */
  readonly steps: number;
  /** On failure, the longest order of operation ids the search could linearize (for a report). */
  readonly longestPrefix: readonly number[];
}

/** The verdict on a history. */
export interface CheckResult {
  /** false when any key is not linearizable; "unknown" when none failed but some ran out of budget. */
  readonly ok: boolean | "unknown";
  readonly keys: readonly KeyResult[];
}

/** Settings of {@link checkLinearizable}. */
export interface CheckOptions {
  /** Search steps allowed per key before giving up with "unknown" (default 1,000,000). */
  readonly maxStepsPerKey?: number;
}

/** Checks a whole history, key by key. */
export function checkLinearizable<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: CheckOptions = {},
): CheckResult {
  const byKey = new Map<string, Operation<I, O>[]>();
  for (const op of history) {
    const list = byKey.get(op.key);
    if (list === undefined) byKey.set(op.key, [op]);
    else list.push(op);
  }
  const keys = [...byKey].map(([key, ops]) => checkKey(model, key, ops, options.maxStepsPerKey ?? 1_000_000));
  const ok = keys.some((k) => k.ok === false) ? false : keys.some((k) => k.ok === "unknown") ? "unknown" : true;
  return { ok, keys };
}

/** One entry of the doubly linked list of calls and returns (Lowe's representation). */
interface Entry<I, O> {
  readonly call: boolean;
  readonly op: Operation<I, O>;
  /** The op's index within its key (bit in the linearized set). */
  readonly index: number;
  readonly time: number;
  /** A call's return entry (and a return's call). */
  match: Entry<I, O> | undefined;
  prev: Entry<I, O> | undefined;
  next: Entry<I, O> | undefined;
}

interface Frame<S, I, O> {
  readonly entry: Entry<I, O>;
  readonly state: S;
  readonly at: number;
  readonly choices: readonly Step<S>[];
  readonly choice: number;
}

function checkKey<S, I, O>(model: Model<S, I, O>, key: string, ops: readonly Operation<I, O>[], maxSteps: number): KeyResult {
  const entries: Entry<I, O>[] = [];
  ops.forEach((op, index) => {
    const call: Entry<I, O> = { call: true, op, index, time: op.invokeAt, match: undefined, prev: undefined, next: undefined };
    const ret: Entry<I, O> = { call: false, op, index, time: op.returnAt ?? Infinity, match: call, prev: undefined, next: undefined };
    call.match = ret;
    entries.push(call, ret);
  });
  // Calls before returns at the same instant: such operations count as concurrent (the lenient reading of a tie).
  entries.sort((a, b) => a.time - b.time || (a.call === b.call ? 0 : a.call ? -1 : 1));
  const head: Entry<I, O> = {
    call: false,
    op: undefined as never,
    index: -1,
    time: -Infinity,
    match: undefined,
    prev: undefined,
    next: undefined,
  };
  let last = head;
  for (const e of entries) {
    last.next = e;
    e.prev = last;
    last = e;
  }

  // The linearized set enters the memo key as a 64-bit Zobrist hash (two 32-bit halves, one random
  // pair per operation, XORed in and out): O(1) per step instead of O(n). Two different sets collide
  // with probability about 2^-64 per pair of cache entries, which would at worst prune one branch.
  const zobrist = zobristTable(ops.length);
  let setHash1 = 0;
  let setHash2 = 0;
  const toggle = (index: number) => {
    setHash1 ^= zobrist[2 * index]!;
    setHash2 ^= zobrist[2 * index + 1]!;
  };
  const cache = new Set<string>();
  const stack: Frame<S, I, O>[] = [];
  let state = model.init(key);
  let at = -Infinity;
  let steps = 0;
  let longest: number[] = [];
  const cacheKey = (s: S, t: number) => `${setHash1}:${setHash2}|${t}|${model.hash(s)}`;

  /** Tries choices[from..] of a call; on success applies it and returns true. */
  const tryChoices = (entry: Entry<I, O>, choices: readonly Step<S>[], from: number): boolean => {
    for (let i = from; i < choices.length; i++) {
      const c = choices[i]!;
      toggle(entry.index);
      const k = cacheKey(c.state, c.at);
      if (cache.has(k)) {
        toggle(entry.index);
        continue;
      }
      cache.add(k);
      stack.push({ entry, state, at, choices, choice: i });
      state = c.state;
      at = c.at;
      lift(entry);
      return true;
    }
    return false;
  };

  let entry = head.next;
  while (head.next !== undefined) {
    if (++steps > maxSteps) return { key, ok: "unknown", operations: ops.length, steps, longestPrefix: longest };
    if (entry === undefined) throw new Error("linearizability: ran off the end of the history");
    if (entry.call) {
      const op = entry.op;
      const from = Math.max(at, op.invokeAt);
      const to = op.returnAt ?? Infinity;
      let choices: readonly Step<S>[] = from <= to ? model.step(state, op.input, op.output, from, to) : [];
      // An unknown outcome may also never have taken effect (it then constrains nothing, not even time).
      if (op.output === undefined) choices = [...choices, { state, at }];
      if (tryChoices(entry, choices, 0)) {
        if (stack.length > longest.length) longest = stack.map((f) => f.entry.op.id);
        entry = head.next;
      } else {
        entry = entry.next;
      }
    } else {
      // A return whose call is not linearized yet: undo the latest choice.
      let resumed = false;
      while (!resumed) {
        const frame = stack.pop();
        if (frame === undefined) return { key, ok: false, operations: ops.length, steps, longestPrefix: longest };
        state = frame.state;
        at = frame.at;
        toggle(frame.entry.index);
        unlift(frame.entry);
        if (tryChoices(frame.entry, frame.choices, frame.choice + 1)) {
          entry = head.next;
          resumed = true;
        } else {
          entry = frame.entry.next;
          resumed = entry === undefined || entry.call;
          if (!resumed) continue;
        }
      }
    }
  }
  return { key, ok: true, operations: ops.length, steps, longestPrefix: [] };
}

/** Random 32-bit words, two per operation, from a fixed seed (so a verdict is reproducible). */
function zobristTable(size: number): Uint32Array {
  const table = new Uint32Array(2 * size);
  let state = 0x9e3779b9;
  for (let i = 0; i < table.length; i++) {
    // xorshift32
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    table[i] = state >>> 0;
  }
  return table;
}

/** Takes a call and its return out of the list. */
function lift<I, O>(call: Entry<I, O>): void {
  call.prev!.next = call.next;
  if (call.next !== undefined) call.next.prev = call.prev;
  const ret = call.match!;
  ret.prev!.next = ret.next;
  if (ret.next !== undefined) ret.next.prev = ret.prev;
}

/** Puts them back (in the reverse order of {@link lift}). */
function unlift<I, O>(call: Entry<I, O>): void {
  const ret = call.match!;
  ret.prev!.next = ret;
  if (ret.next !== undefined) ret.next.prev = ret;
  call.prev!.next = call;
  if (call.next !== undefined) call.next.prev = call;
}

// ---------------------------------------------------------------------------
// The lock model (the contract's lock.* semantics, one key per lock name).

/** A lock command as the checker sees it. */
export type LockInput =
  | { readonly op: "acquire"; readonly owner: string; readonly ttlMs: number }
  | { readonly op: "renew"; readonly owner: string; readonly etag: string; readonly ttlMs?: number | undefined }
  | { readonly op: "release"; readonly etag: string }
  | { readonly op: "get" }
  | { readonly op: "reset" };

/** A lease as a reply shows it (`expiresAt` as epoch ms). */
export interface LockLeaseView {
  readonly owner: string;
  readonly generation: number;
  readonly etag: string;
  readonly expiresAtMs: number;
  readonly ttlMs: number;
}

/** What the client saw: a success (with the lease the reply carried, or null for a free lock) or a contract error. */
export type LockOutput =
  | { readonly ok: true; readonly lease?: LockLeaseView | null }
  | { readonly ok: false; readonly code: string; readonly holder?: { readonly owner: string; readonly expiresAtMs: number } };

/** The model's state of one lock. */
export interface LockModelState {
  /** Highest generation granted so far. */
  readonly generation: number;
  /** The current lease (possibly expired), null when released, reset or never held. */
  readonly lease: {
    readonly owner: string;
    readonly generation: number;
    /** null when the lease came from an operation whose reply nobody saw. */
    readonly etag: string | null;
    readonly ttlMs: number;
    /** The expiry instant is known to lie in [lo, hi] (equal when a reply showed it). */
    readonly lo: number;
    readonly hi: number;
  } | null;
}

type Lease = NonNullable<LockModelState["lease"]>;

/** Contract errors that do not depend on the lock's state: they leave it as it is. */
const STATELESS_ERRORS = new Set(["BAD_REQUEST", "TTL_EXCEEDS_MAX"]);

/** The earliest instant in [from, to] at which `lease` may have expired, with its narrowed interval; null if none. */
function expiredAt(lease: Lease, from: number, to: number): { at: number; lease: Lease } | null {
  const at = Math.max(from, lease.lo);
  return at <= to ? { at, lease: { ...lease, hi: Math.min(lease.hi, at) } } : null;
}

/** The lease narrowed to "still live at `at`" (expiry after it), or null when it cannot be. */
function liveAt(lease: Lease, at: number): Lease | null {
  return lease.hi > at ? { ...lease, lo: Math.max(lease.lo, at + 1) } : null;
}

/** The lease narrowed to expire exactly at `x`, or null when its interval excludes it. */
function expiringAt(lease: Lease, x: number): Lease | null {
  return lease.lo <= x && x <= lease.hi ? { ...lease, lo: x, hi: x } : null;
}

/** The contract's locks as a sequential, time-aware model. */
export const lockModel: Model<LockModelState, LockInput, LockOutput> = {
  init: () => ({ generation: 0, lease: null }),
  hash: (s) => JSON.stringify(s),
  step(s, input, output, from, to) {
    if (output !== undefined && !output.ok && STATELESS_ERRORS.has(output.code)) return [{ state: s, at: from }];
    const lease = s.lease;
    switch (input.op) {
      case "acquire": {
        if (output !== undefined && !output.ok) {
          // LEASE_EXISTS: a live lease, the one the details name.
          if (output.code !== "LEASE_EXISTS" || lease === null) return [];
          let live = liveAt(lease, from);
          if (live !== null && output.holder !== undefined) {
            if (output.holder.owner !== lease.owner || output.holder.expiresAtMs <= from) return [];
            live = expiringAt(live, output.holder.expiresAtMs);
          }
          return live === null ? [] : [{ state: { ...s, lease: live }, at: from }];
        }
        // Granted: the lock was free, or its lease had expired by the instant of the grant.
        const at = lease === null ? from : expiredAt(lease, from, to)?.at;
        if (at === undefined) return [];
        const view = output?.lease ?? undefined;
        if (output !== undefined) {
          if (view === undefined || view === null || view.generation !== s.generation + 1 || view.owner !== input.owner) return [];
          const granted: Lease = {
            owner: view.owner,
            generation: view.generation,
            etag: view.etag,
            ttlMs: view.ttlMs,
            lo: view.expiresAtMs,
            hi: view.expiresAtMs,
          };
          return [{ state: { generation: view.generation, lease: granted }, at }];
        }
        const unseen: Lease = {
          owner: input.owner,
          generation: s.generation + 1,
          etag: null,
          ttlMs: input.ttlMs,
          lo: at + input.ttlMs,
          hi: Infinity,
        };
        return [{ state: { generation: s.generation + 1, lease: unseen }, at }];
      }
      case "renew": {
        const holds = lease !== null && lease.owner === input.owner && lease.etag === input.etag;
        if (output !== undefined && !output.ok) return output.code === "NOT_HELD" && !holds ? [{ state: s, at: from }] : [];
        if (!holds) return [];
        const view = output?.lease ?? undefined;
        if (output !== undefined) {
          if (view === undefined || view === null || view.generation !== lease.generation || view.owner !== lease.owner) return [];
          return [
            {
              state: { ...s, lease: { ...lease, etag: view.etag, ttlMs: view.ttlMs, lo: view.expiresAtMs, hi: view.expiresAtMs } },
              at: from,
            },
          ];
        }
        const ttlMs = input.ttlMs ?? lease.ttlMs;
        return [{ state: { ...s, lease: { ...lease, etag: null, ttlMs, lo: from + ttlMs, hi: Infinity } }, at: from }];
      }
      case "release": {
        if (output !== undefined && !output.ok) {
          if (output.code === "ALREADY_RELEASED") return lease === null ? [{ state: s, at: from }] : [];
          if (output.code === "NOT_HELD") return lease !== null && lease.etag !== input.etag ? [{ state: s, at: from }] : [];
          return [];
        }
        return lease !== null && lease.etag === input.etag ? [{ state: { ...s, lease: null }, at: from }] : [];
      }
      case "get": {
        if (output === undefined) return [];
        if (!output.ok) return [];
        const view = output.lease ?? null;
        if (view === null) {
          if (lease === null) return [{ state: s, at: from }];
          const expired = expiredAt(lease, from, to);
          return expired === null ? [] : [{ state: { ...s, lease: expired.lease }, at: expired.at }];
        }
        if (lease === null || lease.owner !== view.owner || lease.generation !== view.generation) return [];
        if (lease.etag !== null && lease.etag !== view.etag) return [];
        const live = liveAt(lease, from);
        const exact = live === null || view.expiresAtMs <= from ? null : expiringAt(live, view.expiresAtMs);
        // A get may reveal the etag of a lease whose grant nobody saw answered.
        return exact === null ? [] : [{ state: { ...s, lease: { ...exact, etag: view.etag, ttlMs: view.ttlMs } }, at: from }];
      }
      case "reset":
        if (output !== undefined && !output.ok) return [];
        return [{ state: { ...s, lease: null }, at: from }];
    }
  },
};
