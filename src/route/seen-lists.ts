/**
 * Candidate lists known to lie within a route's seen set, so the seen check
 * of a list sent again costs a comparison per host instead of a hash lookup
 * per host. A router sends the same list again and again (often the whole
 * fleet, to every route), and JSON.parse gives short strings interned, so
 * comparing two such lists compares references.
 *
 * Seen sets are immutable (a route that sees a new host gets a new set), so
 * "this list lies within this set" stays true as long as the set exists;
 * the sets are held weakly.
 */

interface KnownList {
  readonly hosts: readonly string[];
  /** Seen sets that hold every host of the list. */
  readonly within: WeakSet<ReadonlySet<string>>;
  /** The list's hosts as a set, built the first time a placement asks for it. */
  members?: ReadonlySet<string>;
}

/** A few recent candidate lists (by content), each with the seen sets known to hold all of it and, once asked, its hosts as a set. */
export class SeenLists {
  /** Most recently used first. */
  private readonly recent: KnownList[] = [];

  constructor(private readonly capacity = 8) {}

  /**
   * The seen sets known to hold every host of `hosts`: the caller adds a set
   * once it has checked. A list not known yet is remembered (a copy; the
   * least recently used beyond the capacity is forgotten).
   */
  within(hosts: readonly string[]): WeakSet<ReadonlySet<string>> {
    return this.known(hosts).within;
  }

  /** The hosts of `hosts` as a set, kept with the list (remembered as {@link within} remembers it). */
  members(hosts: readonly string[]): ReadonlySet<string> {
    const known = this.known(hosts);
    return (known.members ??= new Set(known.hosts));
  }

  /** The known list equal to `hosts`, remembered when it is not known yet. */
  private known(hosts: readonly string[]): KnownList {
    let known = this.find(hosts);
    if (known === undefined) {
      // A frozen list (as requests give, shared by those that send the same bytes) is kept as is; any other is copied.
      known = { hosts: Object.isFrozen(hosts) ? hosts : [...hosts], within: new WeakSet() };
      this.recent.unshift(known);
      if (this.recent.length > this.capacity) this.recent.pop();
    }
    return known;
  }

  /** The known list equal to `hosts` (moved to the front), if any. */
  private find(hosts: readonly string[]): KnownList | undefined {
    for (let i = 0; i < this.recent.length; i++) {
      const known = this.recent[i]!;
      if (!sameList(known.hosts, hosts)) continue;
      if (i > 0) {
        this.recent.splice(i, 1);
        this.recent.unshift(known);
      }
      return known;
    }
    return undefined;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
