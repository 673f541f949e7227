/**
 * The service's HTTP port: `/healthz`, `/readyz`, `/metrics`, the dashboard
 * at `/` with its two assets, its JSON view and its server-sent event stream.
 * Nothing here changes state: only GET and HEAD are answered.
 *
 * node:http rather than a framework: seven fixed read-only routes and one
 * long-lived response need no routing, body parsing or plugins (see
 * docs/dependencies.md).
 */
import { isIP } from "node:net";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { DashboardFeed } from "./dashboard-feed.ts";
import { DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_ICON, DASHBOARD_JS } from "./dashboard-page.ts";
import type { MetricsSource, ServiceMetrics } from "./metrics.ts";

/** What the server serves. */
export interface HttpServerOptions {
  /** `host:port` (`[v6]:port` for IPv6); port 0 picks a free one. */
  readonly listen: string;
  readonly metrics: ServiceMetrics;
  readonly source: MetricsSource;
  readonly feed: DashboardFeed;
  readonly logger: Logger;
  /** Dashboard clients at once at most (default 64); more get 503. */
  readonly maxStreams?: number;
  /** Dashboard clients at once from one address at most (default 8): one peer cannot hold every place. */
  readonly maxStreamsPerPeer?: number;
  /** How long a client may take to send a request's headers (default 10,000 ms); a slower one is cut off. */
  readonly headersTimeoutMs?: number;
  /** A fresh view goes to every client this often even without events (default 5000 ms), so expiries show. */
  readonly refreshMs?: number;
  /**
   * A dashboard client with more than this many bytes sent to it and not yet
   * read is dropped (default 4 MiB): its browser reconnects and gets the view
   * as it is then, and one that never reads costs no more than this.
   */
  readonly maxUnsentBytes?: number;
  /** Host names the dashboard's page and data answer to besides IP addresses and localhost. */
  readonly allowedHosts?: readonly string[];
}

/** The server's settings a caller may change, each with its default. */
export type HttpServerSettings = Pick<
  HttpServerOptions,
  "maxStreams" | "maxStreamsPerPeer" | "headersTimeoutMs" | "refreshMs" | "maxUnsentBytes" | "allowedHosts"
>;

/** A listening server. */
export interface RunningHttpServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  stop(): Promise<void>;
}

/** Splits `host:port`; throws a one-line error for anything else. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(listen.trim());
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port > 65535) throw new Error(`--http: expected <host>:<port> (e.g. 127.0.0.1:7420), got ${JSON.stringify(listen)}`);
  return { host: m[1] ?? m[2]!, port };
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  // The page loads only its own module and stylesheet and talks only to this origin.
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
};

const ASSETS: Readonly<Record<string, { type: string; body: string }>> = {
  "/": { type: "text/html; charset=utf-8", body: DASHBOARD_HTML },
  "/dashboard.js": { type: "text/javascript; charset=utf-8", body: DASHBOARD_JS },
  "/dashboard.css": { type: "text/css; charset=utf-8", body: DASHBOARD_CSS },
  "/favicon.svg": { type: "image/svg+xml", body: DASHBOARD_ICON },
  "/favicon.ico": { type: "image/svg+xml", body: DASHBOARD_ICON },
};

/**
 * Whether the dashboard's page and data answer a request whose `Host` header
 * is `host`: an IP address, `localhost` (or a name under it), or a name the
 * operator allowed. A browser sends the name it was given; a web page that
 * points its own name at this address (DNS rebinding) sends that name, and
 * is refused. No header (not a browser) is allowed. Health and metrics do
 * not ask: a scraper may use any name.
 */
export function dashboardHostAllowed(host: string | undefined, allowed: readonly string[]): boolean {
  if (host === undefined || host === "") return true;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  const name = (bracketed?.[1] ?? host.replace(/:\d+$/, "")).toLowerCase();
  if (isIP(name) !== 0) return true;
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  return allowed.some((a) => a.toLowerCase() === name);
}

/** How long a view made for one reader serves the next ones when nothing changed. */
const VIEW_REUSE_MS = 250;

/** Starts listening; resolves once bound. */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const { host, port } = parseListen(options.listen);
  const streams = new Set<ServerResponse>();
  const maxStreams = options.maxStreams ?? 64;
  const maxPerPeer = options.maxStreamsPerPeer ?? 8;

  const maxUnsent = options.maxUnsentBytes ?? 4 * 1024 * 1024;
  /**
   * The view as JSON, made once per change (and at most every {@link VIEW_REUSE_MS} between changes, for the
   * instants in it) however many clients and requests read it: it walks every state.
   */
  let viewJson: string | undefined;
  let viewAt = 0;
  const currentView = () => {
    const now = performance.now();
    if (viewJson === undefined || now - viewAt > VIEW_REUSE_MS) [viewJson, viewAt] = [JSON.stringify(options.feed.view()), now];
    return viewJson;
  };
  const broadcast = () => {
    viewJson = undefined;
    if (streams.size === 0) return;
    const frame = `event: view\ndata: ${currentView()}\n\n`;
    for (const res of streams) {
      if (res.writableLength > maxUnsent) {
        // Not reading (a tab asleep, or on purpose): what waits for it would grow with every change.
        options.logger.debug({ unsent: res.writableLength }, "dashboard client dropped: it does not read what is sent");
        streams.delete(res);
        res.destroy();
      } else res.write(frame);
    }
  };
  const unsubscribe = options.feed.onChange(broadcast);
  const refresh = setInterval(broadcast, options.refreshMs ?? 5000);
  refresh.unref();

  const headersTimeoutMs = options.headersTimeoutMs ?? 10_000;
  // Node checks the headers' deadline only this often (30 s by default): a client trickling its headers held its socket that long.
  const server: Server = createServer({ connectionsCheckingInterval: Math.min(1000, headersTimeoutMs / 4) }, (req, res) => {
    void handle(req, res).catch((err: unknown) => {
      options.logger.warn({ err, url: req.url }, "HTTP request failed");
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  });
  server.headersTimeout = headersTimeoutMs;
  server.requestTimeout = Math.max(10_000, headersTimeoutMs);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET, HEAD");
      return send(res, 405, "text/plain; charset=utf-8", "read-only: GET or HEAD\n");
    }
    let path: string;
    try {
      path = new URL(req.url ?? "/", "http://localhost").pathname;
    } catch {
      return send(res, 400, "text/plain; charset=utf-8", "bad request target\n");
    }
    if ((ASSETS[path] !== undefined || path.startsWith("/api/")) && !dashboardHostAllowed(req.headers.host, options.allowedHosts ?? [])) {
      // A page on another site that points its own name at this address (DNS rebinding) must not read the leases.
      return send(res, 403, "text/plain; charset=utf-8", "host not allowed: add it with --http-allowed-hosts\n");
    }
    switch (path) {
      case "/healthz":
        return send(res, 200, "text/plain; charset=utf-8", "ok\n");
      case "/readyz": {
        const ready = safeReady(options.source, options.logger);
        return send(res, ready ? 200 : 503, "text/plain; charset=utf-8", ready ? "ready\n" : "not ready\n");
      }
      case "/metrics": {
        const { contentType, body } = await options.metrics.expose();
        return send(res, 200, contentType, body);
      }
      case "/api/view":
        return send(res, 200, "application/json; charset=utf-8", currentView());
      case "/api/stream":
        return openStream(req, res);
    }
    const asset = ASSETS[path];
    if (asset !== undefined) return send(res, 200, asset.type, asset.body);
    return send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }

  function openStream(req: IncomingMessage, res: ServerResponse): void {
    if (streams.size >= maxStreams) return send(res, 503, "text/plain; charset=utf-8", "too many dashboard clients\n");
    // Counted among the open streams (64 at most) rather than kept apart: nothing to keep in step on close.
    const peer = req.socket.remoteAddress;
    let fromPeer = 0;
    for (const open of streams) if (open.req.socket.remoteAddress === peer) fromPeer++;
    if (fromPeer >= maxPerPeer) return send(res, 503, "text/plain; charset=utf-8", "too many dashboard clients from this address\n");
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    if (req.method === "HEAD") return void res.end();
    // Tells EventSource how long to wait before reconnecting after a drop.
    res.write(`retry: 1000\nevent: view\ndata: ${currentView()}\n\n`);
    streams.add(res);
    req.socket.setTimeout(0);
    res.on("close", () => streams.delete(res));
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
  options.logger.info({ url }, "HTTP: /healthz /readyz /metrics and the dashboard at /");

  return {
    url,
    async stop() {
      unsubscribe();
      clearInterval(refresh);
      for (const res of streams) res.end();
      streams.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle keep-alive connections would hold close() up otherwise.
      server.closeAllConnections();
      await closed;
    },
  };
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": type,
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

function safeReady(source: MetricsSource, logger: Logger): boolean {
  try {
    return source.ready();
  } catch (err) {
    logger.warn({ err }, "readiness check failed; answering not ready");
    return false;
  }
}
