/**
 * The client's error mapping: every code of the server's contract table has
 * its own class with the server's status, details are carried, and replies
 * that are not the contract's shape still come out as errors, never as bodies.
 */
import { describe, expect, it } from "vitest";
import { headers } from "@nats-io/nats-core";
import { ERROR_CODES, STATUS, errorBody } from "../../src/contract/errors.ts";
import { REPLY_TO_HEADER as SERVER_REPLY_TO } from "../../src/transport/command-consumer.ts";
import {
  ERROR_CLASSES,
  LeaseholdError,
  NoMatchError,
  REPLY_TO_HEADER,
  UnavailableError,
  UnknownProxyError,
  decodeReply,
  errorFromReply,
  type ErrorCode,
} from "../../src/client/index.ts";

const encoder = new TextEncoder();

/** A reply message exactly as the service's micro responder shapes a failure. */
function failure(code: ErrorCode, message: string, details?: Record<string, unknown>) {
  const h = headers();
  h.set("Nats-Service-Error-Code", String(STATUS[code]));
  h.set("Nats-Service-Error", message);
  return {
    data: encoder.encode(JSON.stringify(errorBody(details === undefined ? { code, message } : { code, message, details }))),
    headers: h,
  };
}

describe("client errors", () => {
  it("has one class per contract code, named after it and answering the server's status", () => {
    expect(Object.keys(ERROR_CLASSES).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const error = (() => {
        try {
          return decodeReply(failure(code, `refused: ${code}`), "p.v1.kind.op");
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ERROR_CLASSES[code]);
      expect(error).toBeInstanceOf(LeaseholdError);
      const e = error as LeaseholdError;
      expect([e.code, e.status, e.message, e.subject, e.details]).toEqual([code, STATUS[code], `refused: ${code}`, "p.v1.kind.op", {}]);
      expect(e.name).toBe(ERROR_CLASSES[code].name);
      expect(e.retryable).toBe(code === "UNAVAILABLE");
    }
  });

  it("carries the details of the error body", () => {
    const stats = { considered: 3, unhealthy: 1, inCooldown: 1, atCapacity: 1 };
    const noMatch = errorFromReply(409, "h", { error: { code: "NO_MATCH", message: "none", stats } });
    expect(noMatch).toBeInstanceOf(NoMatchError);
    expect((noMatch as NoMatchError).stats).toEqual(stats);
    const unknown = errorFromReply(404, "h", { error: { code: "UNKNOWN_PROXY", message: "m", proxies: ["a", "b"] } });
    expect((unknown as UnknownProxyError).proxies).toEqual(["a", "b"]);
    expect(unknown.details).toEqual({ proxies: ["a", "b"] });
  });

  it("decodes a crafted UNAVAILABLE reply as a retryable UnavailableError", () => {
    expect(() => decodeReply(failure("UNAVAILABLE", "the event stream could not be written in time"))).toThrow(UnavailableError);
  });

  it("maps an unknown code to the base class and a reply that is not JSON to an error", () => {
    const internal = errorFromReply(500, "boom", { error: { code: "INTERNAL", message: "boom" } });
    expect(internal.constructor).toBe(LeaseholdError);
    expect([internal.code, internal.status, internal.retryable]).toEqual(["INTERNAL", 500, false]);
    const headerOnly = errorFromReply(503, "from the header", "not an object");
    expect([headerOnly.code, headerOnly.message]).toEqual(["UNKNOWN", "from the header"]);
    const garbled = (() => {
      try {
        return decodeReply<never>({ data: encoder.encode("{oops"), headers: undefined }, "s");
      } catch (e) {
        return e as LeaseholdError;
      }
    })();
    expect(garbled).toBeInstanceOf(LeaseholdError);
    expect([garbled.code, garbled.status]).toEqual(["MALFORMED_REPLY", 502]);
    // A success is the body, untouched; an empty body is {}.
    expect(decodeReply({ data: encoder.encode('{"lease":null}'), headers: undefined })).toEqual({ lease: null });
    expect(decodeReply({ data: new Uint8Array(), headers: undefined })).toEqual({});
  });

  it("names the durable reply header as the service reads it", () => {
    expect(REPLY_TO_HEADER).toBe(SERVER_REPLY_TO);
  });
});
