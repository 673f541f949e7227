/**
 * Who may call operator ops and act on any holder's lease (the service's
 * `--operators`, docs/protocol.md, "Principals"): principals named exactly,
 * or `<account>/*` for every user of an account. The audit reads it too.
 */

/** Who may call operator ops and act on any holder's lease (`--operators`). */
export class Operators {
  private readonly exact = new Set<string>();
  private readonly accounts = new Set<string>();

  /** `list`: principals, `<acc>/*` for every user of `<acc>`. */
  constructor(list: readonly string[]) {
    for (const p of list) {
      if (p.endsWith("/*")) this.accounts.add(p.slice(0, -2));
      else this.exact.add(p);
    }
  }

  /** Whether the list is empty (then anyone may call operator ops, and nobody acts on another's lease). */
  get open(): boolean {
    return this.exact.size === 0 && this.accounts.size === 0;
  }

  /**
   * Whether `principal` is an operator: named exactly, or of an account named
   * `<acc>/*`. A principal that proves only its account (a durable command's)
   * is one when every user of that account is.
   */
  includes(principal: string): boolean {
    if (principal === "") return false;
    if (this.exact.has(principal)) return true;
    return this.accounts.has(accountOfPrincipal(principal));
  }
}

/** The account a principal names: `<acc>` of `<acc>/<user>`, the principal itself when it names only an account. */
export function accountOfPrincipal(principal: string): string {
  const slash = principal.indexOf("/");
  return slash < 0 ? principal : principal.slice(0, slash);
}

/**
 * Whether a request from `principal` acts for `holder`, the principal that
 * created a lease or session: the same principal, or one of them names only
 * the other's account. A durable command proves no more than the account it
 * was published from, so what a client created by one path it must be able
 * to touch by the other (in the account layout each client is an account of
 * one user, so the two name the same client); what one user of an account
 * created by durable command, any user of it could have.
 */
export function actsFor(principal: string, holder: string): boolean {
  if (principal === holder) return true;
  if (principal === "" || holder === "") return false;
  // One names only an account (itself its account) and the other is of it.
  const [account, other] = [accountOfPrincipal(principal), accountOfPrincipal(holder)];
  return account === other && (account === principal || other === holder);
}

/** The principals of a comma-separated list (`--operators`), blanks and empty entries left out. */
export function principalList(text: string): string[] {
  return text
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}
