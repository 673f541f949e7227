/** Running a function while holding something, and letting go of it on the way out. */

/**
 * Runs `fn(held)`, then `release(held)`, also when `fn` throws; `fn`'s error
 * is the one reported then (a failed release only leaves the lease to end by
 * itself), while after a success a failed release is thrown.
 */
export async function runHolding<H, R>(held: H, fn: (held: H) => Promise<R>, release: (held: H) => Promise<void>): Promise<R> {
  let result: R;
  try {
    result = await fn(held);
  } catch (e) {
    await release(held).catch(() => undefined);
    throw e;
  }
  await release(held);
  return result;
}
