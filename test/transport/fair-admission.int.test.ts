/**
 * Fair admission on a real nats-server (src/transport/micro-service.ts):
 * the service framework with handlers the test holds open, so that what is
 * served when is seen exactly. Two connections are two clients (their
 * reply inboxes differ); the clock is the test's.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import {
  MicroService,
  type AdmissionOptions,
  type ShedReason,
  PRESENT_FOR_MS,
  MAX_TURN_WAIT_MS,
  MAX_SERVED,
} from "../../src/transport/micro-service.ts";
import { connectNats, uniquePrefix } from "../support/nats.ts";

const encoder = new TextEncoder();

interface Setup {
  readonly micro: MicroService;
  readonly subject: string;
  /** Request bodies in the order their handlers started. */
  readonly started: string[];
  /** Lets the handler of `body` answer. */
  finish(body: string): void;
  /** The handler of `body` says it waits from now on (as a parked blocking acquire does). */
  park(body: string): void;
  readonly shed: { client: string; reason: ShedReason }[];
  readonly clock: { now: number };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function client(): Promise<NatsConnection> {
  const nc = await connectNats();
  cleanups.push(() => nc.close());
  return nc;
}

async function setup(admission: Omit<AdmissionOptions, "now" | "onShed">): Promise<Setup> {
  const nc = await client();
  const clock = { now: 1_000_000 };
  const shed: Setup["shed"] = [];
  const micro = new MicroService(nc, {
    ...{ name: "fairness-test", version: "0.0.0", description: "test", queue: uniquePrefix() },
    admission: { ...admission, now: () => clock.now, onShed: (client, reason) => shed.push({ client, reason }) },
  });
  const subject = `${uniquePrefix()}.work`;
  const started: string[] = [];
  const open = new Map<string, { resolve: () => void; msg: Msg }>();
  // A test that failed half-way leaves handlers open: they answer, so that the service can stop.
  cleanups.push(async () => {
    for (const { resolve } of open.values()) resolve();
    await micro.stop();
  });
  micro.addEndpoint("work", subject, async (data, msg) => {
    const body = new TextDecoder().decode(data);
    started.push(body);
    await new Promise<void>((resolve) => open.set(body, { resolve, msg }));
    return { ok: true, body: { done: body } };
  });
  await nc.flush();
  return {
    ...{ micro, subject, started, shed, clock },
    finish: (body) => open.get(body)!.resolve(),
    park: (body) => micro.waits(open.get(body)!.msg),
  };
}

/** Sends `bodies` from `nc` (each a request), in order; their answers' bodies (or error codes) as they come. */
function send(nc: NatsConnection, subject: string, bodies: string[]): Promise<string>[] {
  return bodies.map(async (body) => {
    const reply = await nc.request(subject, encoder.encode(body), { timeout: 10_000 });
    const json = reply.json<{ done?: string; error?: { code: string } }>();
    return json.done ?? json.error!.code;
  });
}

const names = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${i}`);

/** Two places (`maxActive` 2), taken by b's `b0` then a's `a0`, in that order; their answers in `held`. */
async function bothPlacesHeld(maxQueued: number) {
  const s = await setup({ maxActive: 2, maxQueued });
  const [a, b] = [await client(), await client()];
  const held = [...send(b, s.subject, ["b0"])];
  await until(() => s.started.length === 1);
  held.push(...send(a, s.subject, ["a0"]));
  await until(() => s.started.length === 2);
  return { s, a, held };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe("fair admission", () => {
  it("serves every request of a client that is alone at once, however many", async () => {
    const s = await setup({ maxActive: 4, maxQueued: 1000 });
    const a = await client();
    const answers = send(a, s.subject, names("a", 20));
    await until(() => s.started.length === 20);
    for (const body of names("a", 20)) s.finish(body);
    expect(await Promise.all(answers)).toEqual(names("a", 20));
  });

  it("gives a second client its share at once, and holds the first to its share while both are present and every place is taken", async () => {
    const s = await setup({ maxActive: 4, maxQueued: 1000 });
    const [a, b] = [await client(), await client()];
    // a alone: all eight are served.
    const first = send(a, s.subject, names("a", 8));
    await until(() => s.started.length === 8);
    // b arrives: its request starts at once, though a has eight in service.
    const fromB = send(b, s.subject, ["b0"]);
    await until(() => s.started.includes("b0"));
    // Nine served, over the 4 places: a's next requests wait while a has its share (4 / 2 clients) or more served.
    const more = send(a, s.subject, names("x", 3));
    await until(() => s.micro.busy === 12);
    s.finish("b0");
    expect(await fromB[0]).toBe("b0");
    for (const body of names("a", 4)) s.finish(body);
    await until(() => s.micro.busy === 7);
    expect(s.started.filter((b) => b.startsWith("x"))).toEqual([]);
    // a4 answered: three served, a place is free, and x0 takes it; then all 4 are taken and a has more than its share.
    s.finish("a4");
    await until(() => s.started.includes("x0") && s.micro.busy === 6);
    expect(s.started.filter((b) => b.startsWith("x"))).toEqual(["x0"]);
    s.finish("a5");
    s.finish("a6");
    await until(() => s.started.includes("x2"));
    for (const body of ["a7", "x0", "x1", "x2"]) s.finish(body);
    expect(await Promise.all([...first, ...more])).toEqual([...names("a", 8), ...names("x", 3)]);
  });

  it("takes the waiting requests of two clients in turn", async () => {
    const s = await setup({ maxActive: 2, maxQueued: 1000 });
    const [a, b] = [await client(), await client()];
    const heldA = send(a, s.subject, ["a-held"]);
    await until(() => s.started.length === 1);
    const heldB = send(b, s.subject, ["b-held"]);
    await until(() => s.started.length === 2);
    // Each has its share (1) served: everything else waits, a's three sent before b's three.
    const waitingA = send(a, s.subject, names("a", 3));
    await until(() => s.micro.busy === 5);
    const waitingB = send(b, s.subject, names("b", 3));
    await until(() => s.micro.busy === 8);
    expect(s.started).toEqual(["a-held", "b-held"]);
    s.finish("a-held");
    s.finish("b-held");
    await until(() => s.started.length === 4);
    for (const done of ["a0", "b0", "a1", "b1"]) {
      const before = s.started.length;
      s.finish(done);
      await until(() => s.started.length === before + 1);
    }
    expect(s.started.slice(2)).toEqual(["a0", "b0", "a1", "b1", "a2", "b2"]);
    for (const body of ["a2", "b2"]) s.finish(body);
    await Promise.all([...heldA, ...heldB, ...waitingA, ...waitingB]);
  });

  it("gives the place of a request that starts waiting (a parked acquire) to the next", async () => {
    const s = await setup({ maxActive: 2, maxQueued: 1000 });
    const [a, b] = [await client(), await client()];
    const answers = [...send(b, s.subject, ["b0"])];
    await until(() => s.started.length === 1);
    answers.push(...send(a, s.subject, names("a", 2)));
    await until(() => s.started.includes("a0") && s.micro.busy === 3);
    expect(s.started).toEqual(["b0", "a0"]);
    s.park("a0");
    await until(() => s.started.includes("a1"));
    for (const body of ["b0", "a0", "a1"]) s.finish(body);
    expect(await Promise.all(answers)).toEqual(["b0", "a0", "a1"]);
  });

  it("tells the durable command path how many clients it counted and when (requestClients)", async () => {
    const s = await setup({ maxActive: 4, maxQueued: 1000 });
    expect(s.micro.requestClients).toEqual({ count: 0, lastAt: -Infinity });
    const [a, b] = [await client(), await client()];
    const fromA = send(a, s.subject, ["a0"]);
    await until(() => s.started.length === 1);
    expect(s.micro.requestClients).toEqual({ count: 1, lastAt: s.clock.now });
    s.clock.now += 10;
    const fromB = send(b, s.subject, ["b0"]);
    await until(() => s.started.length === 2);
    expect(s.micro.requestClients).toEqual({ count: 2, lastAt: s.clock.now });
    s.finish("a0");
    s.finish("b0");
    expect(await Promise.all([...fromA, ...fromB])).toEqual(["a0", "b0"]);
  });

  it("forgets a client gone quiet: the other's share grows back to all", async () => {
    const s = await setup({ maxActive: 2, maxQueued: 1000 });
    const [a, b] = [await client(), await client()];
    const fromB = send(b, s.subject, ["b0"]);
    await until(() => s.started.length === 1);
    s.finish("b0");
    await fromB[0];
    // b was seen just now: once both places are taken a may have 1 served (its share), and the rest waits.
    const fromA = send(a, s.subject, names("a", 3));
    await until(() => s.started.includes("a1") && s.micro.busy === 3);
    expect(s.started).toEqual(["b0", "a0", "a1"]);
    // b sends nothing for longer than PRESENT_FOR_MS: a's next request finds it alone, and all of a's are served.
    s.clock.now += PRESENT_FOR_MS + 1;
    const more = send(a, s.subject, ["a3"]);
    await until(() => s.started.length === 5);
    for (const body of names("a", 4)) s.finish(body);
    expect(await Promise.all([...fromA, ...more])).toEqual(names("a", 4));
  });

  it("serves at most MAX_SERVED at once, however many clients send (a reply inbox per request)", async () => {
    const s = await setup({ maxActive: 8, maxQueued: 1000 });
    const a = await client();
    const bodies = names("r", MAX_SERVED + 44);
    // noMux: each request has an inbox of its own, so each is a client of its own.
    const answers = bodies.map(
      async (body) => (await a.request(s.subject, encoder.encode(body), { timeout: 10_000, noMux: true })).json<{ done: string }>().done,
    );
    await until(() => s.micro.busy === bodies.length);
    expect(s.started).toHaveLength(MAX_SERVED);
    for (const body of [...s.started]) s.finish(body);
    await until(() => s.started.length === bodies.length);
    for (const body of s.started.slice(MAX_SERVED)) s.finish(body);
    expect((await Promise.all(answers)).sort()).toEqual([...bodies].sort());
  });

  it("answers UNAVAILABLE a request that waited too long while every place stays taken, and serves its client's next", async () => {
    const { s, a, held } = await bothPlacesHeld(1000);
    const waiting = send(
      a,
      s.subject,
      names("a", 2).map((x) => `w${x}`),
    );
    await until(() => s.micro.busy === 4);
    // No place frees, yet past MAX_TURN_WAIT_MS both are answered, neither served, in order.
    s.clock.now += MAX_TURN_WAIT_MS + 1;
    expect(await Promise.all(waiting)).toEqual(["UNAVAILABLE", "UNAVAILABLE"]);
    expect(s.shed.map((x) => x.reason)).toEqual(["waited-too-long", "waited-too-long"]);
    expect(s.micro.busy).toBe(2);
    // a's next request waits behind nothing of its own: it is served as soon as a place frees.
    const next = send(a, s.subject, ["a1"]);
    await until(() => s.micro.busy === 3);
    s.finish("b0");
    await until(() => s.started.includes("a1"));
    for (const body of ["a0", "a1"]) s.finish(body);
    expect(await Promise.all([...held, ...next])).toEqual(["b0", "a0", "a1"]);
    expect(s.started).toEqual(["b0", "a0", "a1"]);
  });

  it("answers UNAVAILABLE, without serving it, a request past its client's bound or waiting too long", async () => {
    // maxQueued 10: one client may have one request waiting.
    const { s, a, held } = await bothPlacesHeld(10);
    const waiting = send(a, s.subject, ["a1"]);
    await until(() => s.micro.busy === 3);
    const refused = send(a, s.subject, ["a2"]);
    expect(await refused[0]).toBe("UNAVAILABLE");
    expect(s.shed).toEqual([{ client: expect.stringMatching(/^_INBOX\./), reason: "client-full" }]);
    // a1 waits past MAX_TURN_WAIT_MS: when its turn comes it is answered, not served.
    s.clock.now += MAX_TURN_WAIT_MS + 1;
    s.finish("a0");
    expect(await waiting[0]).toBe("UNAVAILABLE");
    expect(s.shed.map((x) => x.reason)).toEqual(["client-full", "waited-too-long"]);
    expect(s.started).toEqual(["b0", "a0"]);
    s.finish("b0");
    expect(await Promise.all(held)).toEqual(["b0", "a0"]);
  });
});
