/** The contract's order of names and ids: by UTF-16 code units, as JavaScript's `<` compares strings (not by locale). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
