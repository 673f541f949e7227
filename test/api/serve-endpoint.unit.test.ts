/**
 * The one way in (src/transport/endpoint.ts): a command is validated once,
 * counted with its outcome, and answered in wire terms, whether it came as a
 * request or as a durable command; a durable command's body is parsed once
 * and must carry a requestId.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { inDoubt, unavailable } from "../../src/actors/actor-runtime.ts";
import { answer, endpoint, type Endpoint } from "../../src/transport/endpoint.ts";
import { endpointServer } from "../../src/transport/endpoint.ts";
import { requestBase, requiredId } from "../../src/transport/endpoint.ts";

const body = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const schema = requestBase.extend({ name: requiredId, n: z.number().int().optional() });

function served(handle: (name: string) => ReturnType<Endpoint["run"]> = (name) => Promise.resolve(answer({ name }))) {
  const counted: [string, string, string][] = [];
  const handled: string[] = [];
  const e = endpoint("lock", "acquire", schema, (r) => {
    handled.push(r.name);
    return handle(r.name);
  });
  const serve = endpointServer({
    logger: pino({ level: "silent" }),
    observer: { commandFinished: (kind, op, outcome) => void counted.push([kind, op, outcome]) },
  });
  return { serve: serve.bind(undefined, e), counted, handled };
}

describe("endpointServer", () => {
  it("runs a valid request, counts it ok and answers its reply as the body", async () => {
    const s = served();
    const { result, response } = await s.serve(body({ name: "db" }));
    expect(result).toEqual({ ok: true, reply: { name: "db" } });
    expect(response).toEqual({ ok: true, body: { name: "db" } });
    expect(s.counted).toEqual([["lock", "acquire", "ok"]]);
  });

  it("counts a refusal by its code and an outage as unavailable, each with the contract's status", async () => {
    const s = served(() => Promise.resolve(unavailable("the log is away", 100)));
    const bad = await s.serve(body({ name: "" }));
    expect(bad.response).toMatchObject({ ok: false, status: 400, body: { error: { code: "BAD_REQUEST" } } });
    const away = await s.serve(body({ name: "db" }));
    expect(away.response).toMatchObject({ ok: false, status: 503, body: { error: { code: "UNAVAILABLE" } } });
    expect(s.counted).toEqual([
      ["lock", "acquire", "BAD_REQUEST"],
      ["lock", "acquire", "unavailable"],
    ]);
    expect(s.handled).toEqual(["db"]);
  });

  it("marks a command whose event may still be stored as in doubt, so no answer is sent, and counts it unavailable", async () => {
    const s = served(() => Promise.resolve(inDoubt("the ack was lost", 250)));
    const { response } = await s.serve(body({ name: "db" }));
    expect(response).toMatchObject({ ok: false, status: 503, inDoubt: true });
    const plain = served(() => Promise.resolve(unavailable("the log is away", 100)));
    expect((await plain.serve(body({ name: "db" }))).response).not.toHaveProperty("inDoubt");
    expect(s.counted).toEqual([["lock", "acquire", "unavailable"]]);
  });

  it("refuses a durable command without a valid requestId before its schema, and runs one with it", async () => {
    const s = served();
    const durable = { requestedAt: 1 };
    for (const requestId of [undefined, "", 7]) {
      const { response } = await s.serve(body({ name: "", requestId }), durable);
      expect(response).toMatchObject({
        ok: false,
        status: 400,
        message: expect.stringMatching(/^requestId: required on durable commands/),
      });
    }
    expect((await s.serve(body({ name: "", requestId: "r" }), durable)).response).toMatchObject({
      message: expect.stringMatching(/^name:/),
    });
    expect((await s.serve(new TextEncoder().encode("{"), durable)).response).toMatchObject({
      message: expect.stringMatching(/^body is not UTF-8 JSON/),
    });
    expect((await s.serve(body({ name: "db", requestId: "r" }), durable)).result.ok).toBe(true);
    expect(s.handled).toEqual(["db"]);
    expect(s.counted.map(([, , outcome]) => outcome)).toEqual([
      "BAD_REQUEST",
      "BAD_REQUEST",
      "BAD_REQUEST",
      "BAD_REQUEST",
      "BAD_REQUEST",
      "ok",
    ]);
  });

  it("takes a request without a requestId when it is not durable", async () => {
    const s = served();
    expect((await s.serve(body({ name: "db" }))).result.ok).toBe(true);
  });
});
