/**
 * The connection flags shared by serve and every tool: server lists as the
 * nats CLI takes them, one way to authenticate, TLS files read up front, and
 * a one-line message for each way connecting fails.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuthorizationError } from "@nats-io/nats-core";
import { UsageError } from "../../src/cli/cli-errors.ts";
import { appendTarget, explainConnectError, natsServers, natsTarget } from "../../src/cli/connection-options.ts";

describe("natsServers", () => {
  it("splits a comma-separated list, trimming blanks", () => {
    expect(natsServers({ nats: "nats://a:4222, nats://b:4223,,tls://c:4224" }, {})).toEqual([
      "nats://a:4222",
      "nats://b:4223",
      "tls://c:4224",
    ]);
  });

  it("takes --nats (or LEASEHOLD_NATS) over NATS_URL, and NATS_URL when no flag is given", () => {
    expect(natsServers({ nats: "nats://flag:1" }, { NATS_URL: "nats://env:2" })).toEqual(["nats://flag:1"]);
    expect(natsServers({}, { NATS_URL: "nats://env:2,nats://env:3" })).toEqual(["nats://env:2", "nats://env:3"]);
    expect(natsServers({}, {})).toBeUndefined();
    expect(natsServers({ nats: "  " }, {})).toBeUndefined();
  });

  it("accepts host:port and bracketed IPv6 without a scheme", () => {
    expect(natsServers({ nats: "127.0.0.1:4222,[::1]:4222" }, {})).toEqual(["127.0.0.1:4222", "[::1]:4222"]);
  });

  it.each([
    ["not-a-url", /no scheme and no port/],
    ["http://a:4222", /scheme http:\/\/ is not nats:\/\/ or tls:\/\//],
    ["nats://a:4222/path", /no path/],
    ["nats://:4222", /is not a NATS URL/],
    [",", /no URL/],
  ])("refuses %j with a usage error naming --nats", (nats, message) => {
    expect(() => natsServers({ nats }, {})).toThrow(UsageError);
    expect(() => natsServers({ nats }, {})).toThrow(message);
    expect(() => natsServers({ nats }, {})).toThrow(/^--nats: /);
  });
});

describe("natsTarget", () => {
  const dir = mkdtempSync(join(tmpdir(), "leasehold-conn-"));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  it("uses the fallback when no server is named, with no credentials", () => {
    const target = natsTarget({}, ["nats://127.0.0.1:4222"], {});
    expect(target).toMatchObject({ servers: ["nats://127.0.0.1:4222"], label: "nats://127.0.0.1:4222", auth: {}, hasCredentials: false });
  });

  it("passes user and password, or a token", () => {
    expect(natsTarget({ nats: "nats://a:1", user: "u", password: "p" }, [], {}).auth).toEqual({ user: "u", pass: "p" });
    expect(natsTarget({ nats: "nats://a:1", token: "t" }, [], {}).auth).toEqual({ token: "t" });
  });

  it("takes the reply prefix from --inbox-prefix, else from the user (_INBOX_<user>), else leaves nats.js's _INBOX", () => {
    expect(natsTarget({ nats: "nats://a:1", user: "alice", password: "p" }, [], {}).inboxPrefix).toBe("_INBOX_alice");
    expect(natsTarget({ nats: "nats://a:1", user: "alice", password: "p", inboxPrefix: "_INBOX_ops" }, [], {}).inboxPrefix).toBe(
      "_INBOX_ops",
    );
    expect(natsTarget({ nats: "nats://a:1", token: "t" }, [], {}).inboxPrefix).toBeUndefined();
    for (const bad of ["_INBOX.>", "a b", "x.*"])
      expect(() => natsTarget({ nats: "nats://a:1", inboxPrefix: bad }, [], {})).toThrow(/--inbox-prefix: subject tokens/);
  });

  it("reads a creds file into an authenticator", () => {
    const creds = file(
      "user.creds",
      "-----BEGIN NATS USER JWT-----\neyJ0eXAiOiJKV1QifQ.e30.sig\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\nSUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4\n------END USER NKEY SEED------\n",
    );
    const target = natsTarget({ nats: "nats://a:1", creds }, [], {});
    expect(typeof target.auth.authenticator).toBe("function");
    expect(target.hasCredentials).toBe(true);
  });

  it("reads the TLS files up front, so a wrong path is a usage error", () => {
    const ca = file("ca.pem", "CA");
    const cert = file("cert.pem", "CERT");
    const key = file("key.pem", "KEY");
    expect(natsTarget({ nats: "tls://a:1", tlsCa: ca, tlsCert: cert, tlsKey: key }, [], {}).auth.tls).toEqual({
      ca: "CA",
      cert: "CERT",
      key: "KEY",
    });
    expect(() => natsTarget({ nats: "tls://a:1", tlsCa: join(dir, "missing.pem") }, [], {})).toThrow(
      /^--tls-ca: cannot read .*missing\.pem: ENOENT$/,
    );
  });

  it.each([
    [{ password: "p" }, /--password needs --user/],
    [{ user: "u" }, /--user needs --password/],
    [{ user: "u", password: "p", token: "t" }, /--user\/--password and --token: give one way to authenticate/],
    [{ tlsCert: "c" }, /--tls-cert and --tls-key go together/],
  ])("refuses the combination %j", (flags, message) => {
    expect(() => natsTarget({ nats: "nats://a:1", ...flags }, [], {})).toThrow(message);
  });
});

describe("explainConnectError", () => {
  const target = natsTarget({ nats: "nats://a:1,nats://b:2" }, [], {});

  it("names the servers and the cause in one line", () => {
    const refused = Object.assign(new Error("connection refused"), {
      cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
    });
    expect(explainConnectError(target, refused)).toBe(
      "cannot connect to NATS at nats://a:1,nats://b:2: connection refused: is nats-server running there? (set --nats, LEASEHOLD_NATS or NATS_URL)",
    );
    expect(explainConnectError(target, Object.assign(new Error("getaddrinfo ENOTFOUND a"), { code: "ENOTFOUND" }))).toMatch(
      /: unknown host /,
    );
    expect(explainConnectError(target, new Error("timeout"))).toMatch(/: no answer in time /);
  });

  it("names the flag, not the servers, when the server was reached but the flags do not fit it", () => {
    expect(explainConnectError(target, new Error("unable to parse credentials"))).toBe(
      "--creds (or --append-creds): not a NATS credentials file, a user JWT and an NKey seed (unable to parse credentials)",
    );
    expect(explainConnectError(target, new Error("server does not support 'tls'"))).toBe(
      "NATS at nats://a:1,nats://b:2 speaks no TLS, but --tls-ca, --tls-cert or a tls:// URL asks for it: drop them, or name the server's TLS port",
    );
  });

  it("says which flags carry credentials when the server refuses them", () => {
    expect(explainConnectError(target, new AuthorizationError("Authorization Violation"))).toBe(
      "NATS at nats://a:1,nats://b:2 refused the credentials (it needs --creds, --user/--password or --token)",
    );
  });
});

describe("appendTarget", () => {
  const servers = ["nats://a:1"];

  it("is undefined without any --append-* flag: serve then runs on one connection", () => {
    expect(appendTarget({ user: "svc", password: "p" }, servers)).toBeUndefined();
  });

  it("connects the appending user to the same servers and TLS, receiving under its own inbox prefix", () => {
    const target = appendTarget({ user: "svc", password: "p", appendUser: "svc-append", appendPassword: "q" }, servers)!;
    expect(target.servers).toEqual(servers);
    expect(target.auth).toEqual({ user: "svc-append", pass: "q" });
    expect(target.inboxPrefix).toBe("_INBOX_svc-append");
  });

  it("names the --append-* flags in its usage errors", () => {
    expect(() => appendTarget({ appendPassword: "q" }, servers)).toThrow(UsageError);
    expect(() => appendTarget({ appendPassword: "q" }, servers)).toThrow(/need --append-user or --append-creds/);
    expect(() => appendTarget({ appendUser: "svc-append" }, servers)).toThrow(
      "--append-user needs --append-password (or LEASEHOLD_APPEND_PASSWORD)",
    );
  });
});
