/**
 * LEASEHOLD_CHAOS_LOG_DIR: a folder where a chaos run keeps what it needs to
 * read a failure in full (each instance's whole log, each failed lock's
 * records and events); undefined when unset or empty.
 */
export function chaosLogDir(): string | undefined {
  const dir = process.env.LEASEHOLD_CHAOS_LOG_DIR;
  return dir === undefined || dir === "" ? undefined : dir;
}
