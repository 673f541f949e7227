/**
 * Lease and session ids drawn from a pooled CSPRNG buffer: each is 16 bytes
 * as 22 base64url characters, and no bytes are handed out twice, across
 * refills of the pool included.
 */
import { describe, expect, it } from "vitest";
import { secureIds } from "../../src/service/secure-ids.ts";

describe("secureIds", () => {
  it("gives 128-bit base64url ids, all distinct, across several refills of its pool", () => {
    const next = secureIds();
    const ids = Array.from({ length: 256 * 3 + 7 }, () => next());
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(Buffer.from(id, "base64url")).toHaveLength(16);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("gives two generators different ids (each draws its own bytes)", () => {
    const a = secureIds();
    const b = secureIds();
    const fromA = new Set(Array.from({ length: 300 }, () => a()));
    for (let i = 0; i < 300; i++) expect(fromA.has(b())).toBe(false);
  });
});
