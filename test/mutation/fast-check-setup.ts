/**
 * Setup of the mutation run only (vitest.mutation.config.ts): a property that
 * fails against a mutant has killed it, so fast-check stops at the first
 * counterexample instead of shrinking it (shrinking a 60-step history can take
 * longer than the run that found it). `npm test` keeps shrinking.
 */
import fc from "fast-check";

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true });
