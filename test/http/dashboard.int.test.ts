/**
 * The live dashboard in a real headless browser (Debian's chromium through
 * playwright-core): a lock acquired through NATS appears without reloading,
 * pushed by the change itself (the periodic refresh is set to ten minutes, so
 * no wall-clock bound is needed to tell the two apart), and disappears the
 * same way on its release; the
 * filter box narrows every table; a host shows the load it publishes; a
 * session shows the locks held under it and goes, with them, when it is
 * closed; the
 * page fits 1280x800 and a phone. On the account layout `nats-config` writes
 * (the server naming who sends each request), every lease, session, proxy
 * lease and event shows its principal.
 * With LEASEHOLD_DASHBOARD_SCREENSHOT=1 it also writes docs/img/dashboard.png.
 */
import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import type { NatsConnection } from "@nats-io/nats-core";
import { publishHostLoad } from "../../src/client/host-load.ts";
import { httpParts, startHttp, ServiceMetrics, type RunningHttp } from "../../src/http/index.ts";
import { call, quietLogger, uniquePrefix } from "../support/nats.ts";
import { startLayout, type LayoutServer } from "../security/layout-server.ts";
import { startHttpTestService, type HttpTestService } from "./support/http-service.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** CHROMIUM_BIN (set by .ci/run), else whatever scripts/chromium.sh finds or installs. */
async function chromiumPath(): Promise<string> {
  if (process.env.CHROMIUM_BIN) return process.env.CHROMIUM_BIN;
  const { stdout } = await promisify(execFile)("bash", [`${ROOT}scripts/chromium.sh`], { timeout: 600_000 });
  return stdout.trim();
}

let s: HttpTestService;
let browser: Browser;
let prefix: string;

beforeAll(async () => {
  prefix = uniquePrefix();
  // The periodic refresh far beyond any wait below: whatever the page shows, a push on the change showed it.
  s = await startHttpTestService(prefix, {}, { refreshMs: 600_000 });
  // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
  browser = await chromium.launch({ executablePath: await chromiumPath(), headless: true, args: ["--no-sandbox"], timeout: 30_000 });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await s?.stop();
});

async function open(width: number, height: number, base = s.base): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height } });
  await page.goto(base, { timeout: 10_000 });
  await page.locator("#status", { hasText: "live" }).waitFor({ timeout: 5000 });
  return page;
}

const ok = async (kindOp: string, body: unknown) => {
  const reply = await call(s.test.nc, prefix, kindOp, body);
  expect(reply.code, `${kindOp} ${JSON.stringify(reply.body)}`).toBeUndefined();
  return reply;
};

describe("dashboard", () => {
  it("shows a lock acquired through NATS as the change is pushed, and drops it when its release is", async () => {
    const page = await open(1280, 800);
    try {
      const row = page.locator('#locks tr[data-name="deploy/prod"]');
      expect(await row.count()).toBe(0);

      const acquired = await ok("lock.acquire", { name: "deploy/prod", owner: "ci-runner-7", ttlMs: 30_000 });
      // Generous waits: only a push on the change can satisfy them (the refresh comes every ten minutes).
      await row.waitFor({ timeout: 10_000 });
      await expect
        .poll(() => row.locator("td").allTextContents())
        .toEqual(["deploy/prod", "ci-runner-7", "1", expect.stringMatching(/^\d+\.\d s$/), "0", "—"]);

      const { lease } = acquired.body as { lease: { etag: string } };
      await ok("lock.release", { name: "deploy/prod", etag: lease.etag });
      await row.waitFor({ state: "detached", timeout: 10_000 });
    } finally {
      await page.close();
    }
  });

  it("shows two locks whose names look alike as two different names, the invisible code points escaped", async () => {
    const page = await open(1280, 800);
    try {
      const held: [string, string][] = [];
      for (const name of ["look/alike", "\u200Blook/alike", "look/alike ", "look/alik\u00E9", "look/alike\u0301"])
        held.push([name, ((await ok("lock.acquire", { name, owner: "o", ttlMs: 30_000 })).body as { lease: { etag: string } }).lease.etag]);
      onTestFinished(async () => {
        for (const [name, etag] of held) await ok("lock.release", { name, etag });
      });
      const names = () => page.locator("#locks tr td:first-child").allTextContents();
      await expect
        .poll(async () => (await names()).filter((n) => n.includes("look/alik")).sort())
        .toEqual(['"\\u200blook/alike"', '"look/alike "', '"look/alike\\u0301"', "look/alike", "look/alik\u00E9"]);
      // So in the latest events, whose ids are shown the same way.
      const actors = () => page.locator("#events .actor").allTextContents();
      await expect.poll(async () => (await actors()).includes('lock "\\u200blook/alike"')).toBe(true);
    } finally {
      await page.close();
    }
  });

  it("shows a session with the locks held under it, and drops both as its close is pushed", async () => {
    const page = await open(1280, 800);
    try {
      const opened = await ok("session.open", { owner: "batch-4", ttlMs: 30_000 });
      const { id } = (opened.body as { session: { id: string } }).session;
      await ok("lock.acquire", { name: "shard/2", owner: "batch-4", session: id });
      await ok("lock.acquire", { name: "shard/1", owner: "batch-4", session: id });
      const row = page.locator(`#sessions tr[data-name="${id}"]`);
      await row.waitFor({ timeout: 10_000 });
      await expect
        .poll(() => row.locator("td").allTextContents())
        .toEqual([id, "batch-4", expect.stringMatching(/^\d+\.\d s$/), "2 locksshard/1shard/2"]);
      const lock = page.locator('#locks tr[data-name="shard/1"]');
      await expect.poll(() => lock.locator("td").last().textContent()).toBe(id);

      await ok("session.close", { id });
      await row.waitFor({ state: "detached", timeout: 10_000 });
      await lock.waitFor({ state: "detached", timeout: 10_000 });
    } finally {
      await page.close();
    }
  });

  it("lists proxies, hosts and events, filters them, and fits 1280x800 and a phone", async () => {
    await ok("proxy.register", { proxy: "egress-a", maxLeases: 4, latencyMs: 20, labels: { region: "eu", tier: "premium" } });
    await ok("proxy.register", { proxy: "egress-b", maxLeases: 2, latencyMs: 35 });
    const grant = await ok("proxy.acquire", { ttlMs: 30_000, target: "api.example.com" });
    await ok("proxy.acquire", { ttlMs: 30_000 });
    await ok("proxy.report", { leaseId: (grant.body as { lease: { id: string } }).lease.id, result: "rate_limited" });
    // A cap of 2: both conversations fit, and the host shows as full.
    await ok("host.set", { host: "gpu-1", healthy: true, maxLeases: 2 });
    await ok("host.set", { host: "gpu-2", healthy: true, draining: true });
    await ok("host.set", { host: "gpu-3", healthy: false });
    await ok("route.acquire", { route: "chat", fp: "user-17", model: "llama-70b", candidates: ["gpu-1", "gpu-2"] });
    await ok("route.acquire", { route: "chat", fp: "user-42", model: "llama-70b", candidates: ["gpu-1", "gpu-2"] });
    await ok("lock.acquire", { name: "db-migration", owner: "api-3", ttlMs: 25_000 });
    const nightly = await ok("lock.acquire", { name: "nightly-report", owner: "worker-9", ttlMs: 20_000 });
    // A heartbeat: hidden from the events until asked for.
    await ok("lock.renew", { name: "nightly-report", owner: "worker-9", etag: (nightly.body as { lease: { etag: string } }).lease.etag });
    const session = await ok("session.open", { owner: "batch-4", ttlMs: 30_000 });
    const sessionId = (session.body as { session: { id: string } }).session.id;
    await ok("lock.acquire", { name: "shard/1", owner: "batch-4", session: sessionId });
    // gpu-1 publishes its load (1.2; not an event): shown once the instance has it.
    publishHostLoad(s.test.nc, "gpu-1", 0.75, { prefix });
    await expect
      .poll(async () => ((await ok("host.list", {})).body as { hosts: { host: string; load: number | null }[] }).hosts[0]?.load)
      .toBe(0.75);

    const page = await open(1280, 800);
    try {
      await page.locator('#proxies tr[data-name="egress-a"]', { hasText: "1 / 4" }).waitFor({ timeout: 2000 });
      await page.locator('#proxies tr[data-name="egress-a"]', { hasText: "api.example.com" }).waitFor({ timeout: 2000 });
      await page.locator('#hosts tr[data-name="gpu-1"]', { hasText: "2 leases of 2 max" }).waitFor({ timeout: 2000 });
      await page.locator('#hosts tr[data-name="gpu-1"] .badge', { hasText: "full" }).waitFor({ timeout: 2000 });
      await page.locator('#hosts tr[data-name="gpu-1"] td', { hasText: /^0\.75$/ }).waitFor({ timeout: 2000 });
      await page.locator('#hosts tr[data-name="gpu-2"]', { hasText: "draining" }).waitFor({ timeout: 2000 });
      await page.locator("#events tr", { hasText: "LockAcquired" }).first().waitFor({ timeout: 2000 });
      await page.locator(`#sessions tr[data-name="${sessionId}"]`).waitFor({ timeout: 2000 });
      await expect
        .poll(() => page.locator('#proxies tr[data-name="egress-a"] td').allTextContents())
        .toEqual(["egress-a", "1 / 4", "20 ms", "region=eutier=premium", "healthy", expect.stringMatching(/^api\.example\.com: /)]);
      expect(await page.locator("#events tr", { hasText: "LockRenewed" }).count()).toBe(0);
      await page.check("#heartbeats");
      await page.locator("#events tr", { hasText: "LockRenewed" }).first().waitFor({ timeout: 2000 });
      await page.uncheck("#heartbeats");
      const fitsWidth = () => page.evaluate<boolean>("document.documentElement.scrollWidth <= window.innerWidth");
      expect(await fitsWidth()).toBe(true);
      if (process.env.LEASEHOLD_DASHBOARD_SCREENSHOT === "1") {
        mkdirSync(`${ROOT}docs/img`, { recursive: true });
        await page.screenshot({ path: `${ROOT}docs/img/dashboard.png` });
      }
      expect((await page.screenshot()).length).toBeGreaterThan(10_000);

      await page.fill("#filter", "gpu-2");
      await expect.poll(() => page.locator("#hosts tbody tr[data-name]").count()).toBe(1);
      expect(await page.locator("#locks tr[data-name]").count()).toBe(0);
      await page.fill("#filter", "");
      await expect.poll(() => page.locator("#locks tr[data-name]").count()).toBe(3);
      await page.fill("#filter", "premium");
      await expect.poll(() => page.locator("#proxies tbody tr[data-name]").count()).toBe(1);
      await page.fill("#filter", "");

      await page.setViewportSize({ width: 390, height: 844 });
      expect(await fitsWidth()).toBe(true);
      const box = await page.locator("#filter").boundingBox();
      expect(box !== null && box.width > 150 && box.x + box.width <= 390).toBe(true);
    } finally {
      await page.close();
    }
  });

  it("has a tab icon where browsers look for one", async () => {
    for (const path of ["/favicon.ico", "/favicon.svg"]) {
      const res = await fetch(new URL(path, s.base));
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/svg+xml");
      expect(await res.text()).toMatch(/^<svg /);
    }
  });
});

describe("dashboard on the account layout", () => {
  let layout: LayoutServer | undefined;
  let http: RunningHttp | undefined;
  afterAll(async () => {
    await http?.stop();
    await layout?.stop();
  });

  it("shows the principal behind each lease, session, proxy lease and event", async () => {
    const PREFIX = "acme.dash";
    layout = await startLayout(
      { options: { prefix: PREFIX, layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] } },
      { principals: "nats-request-info", operators: ["ops/ops"] },
    );
    http = await startHttp({
      listen: "127.0.0.1:0",
      service: httpParts(layout.answering, layout.service),
      metrics: new ServiceMetrics(),
      logger: quietLogger,
      server: { refreshMs: 600_000 },
    });
    const [alice, bob, ops] = [await layout.as("alice"), await layout.as("bob"), await layout.as("ops")];
    const send = async (nc: NatsConnection, kindOp: string, body: unknown) => {
      const reply = await call(nc, PREFIX, kindOp, body);
      expect(reply.code, `${kindOp} ${JSON.stringify(reply.body)}`).toBeUndefined();
      return reply.body;
    };
    await send(alice, "lock.acquire", { name: "reports", owner: "worker-a", ttlMs: 30_000 });
    const { session } = (await send(bob, "session.open", { owner: "batch-b", ttlMs: 30_000 })) as { session: { id: string } };
    await send(ops, "proxy.register", { proxy: "egress", maxLeases: 4, latencyMs: 10 });
    await send(alice, "proxy.acquire", { ttlMs: 30_000 });
    await send(alice, "proxy.acquire", { ttlMs: 30_000 });
    await send(bob, "proxy.acquire", { ttlMs: 30_000 });

    const page = await open(1280, 800, http.url);
    try {
      const principalOf = (row: string) => page.locator(`${row} .principal`).allTextContents();
      await expect.poll(() => principalOf('#locks tr[data-name="reports"]')).toEqual(["by alice/alice"]);
      await expect.poll(() => page.locator('#locks tr[data-name="reports"] td').nth(1).textContent()).toBe("worker-aby alice/alice");
      await expect.poll(() => principalOf(`#sessions tr[data-name="${session.id}"]`)).toEqual(["by bob/bob"]);
      await expect.poll(() => principalOf('#proxies tr[data-name="egress"]')).toEqual(["by alice/alice ×2, bob/bob"]);
      const eventBy = (type: string) => page.locator("#events tr", { hasText: type }).locator(".principal").allTextContents();
      await expect.poll(() => eventBy("LockAcquired")).toEqual(["by alice/alice"]);
      await expect.poll(() => eventBy("SessionOpened")).toEqual(["by bob/bob"]);
      await expect.poll(() => eventBy("ProxyRegistered")).toEqual(["by ops/ops"]);
      // The filter finds rows by their principal.
      await page.fill("#filter", "bob/bob");
      await expect.poll(() => page.locator("#locks tr[data-name]").count()).toBe(0);
      await expect.poll(() => page.locator("#sessions tr[data-name]").count()).toBe(1);
      await expect.poll(() => page.locator("#proxies tr[data-name]").count()).toBe(1);
    } finally {
      await page.close();
    }
  });
});
