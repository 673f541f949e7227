/**
 * A nats-server started from one of the layouts leasehold ships or writes
 * (the shipped nats.conf, `nats-config`'s users layout, its account layout),
 * a service instance on it with its two users (one answers, one appends), and
 * connections as any of the layout's users.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { PROJECT_ROOT } from "../../src/cluster/nats-server-binary.ts";
import { resolveConfig, type ServiceConfig } from "../../src/config.ts";
import { startService, type RunningService } from "../../src/service/start-service.ts";
import {
  appendPasswordEnvOf,
  appendUserOf,
  serviceFlagsOf,
  inboxPrefixOf,
  natsUsers,
  passwordEnvOf,
  servicePasswordEnvOf,
  serviceUserOf,
  type NatsConfigOptions,
} from "../../src/security/nats-permissions.ts";
import { natsConfig } from "../../src/security/nats-config-text.ts";
import { quietLogger } from "../support/nats.ts";
import { defer, leasehold, waitForLog, type Proc } from "../cli/cli-process.ts";
import { startConfiguredServer, type ConfiguredServer } from "./configured-server.ts";

/** Which configuration: the shipped file, or nats-config's output for these options. */
export type LayoutSource =
  { readonly shipped: true } | { readonly shipped?: false; readonly options: NatsConfigOptions; readonly edit?: (text: string) => string };

/** A running layout's nats-server, without a service. */
export interface LayoutNats {
  readonly prefix: string;
  readonly url: string;
  /** A connection as `user` (undefined: without credentials), with the inbox prefix its permissions expect. */
  as(user: string | undefined): Promise<NatsConnection>;
  /** Closes every connection `as` opened and stops the server. */
  stop(): Promise<void>;
}

/** A running layout with its service. */
export interface LayoutServer extends LayoutNats {
  readonly service: RunningService;
  /** The service's answering connection. */
  readonly answering: NatsConnection;
  /** The service's appending connection (it may read every stream). */
  readonly appending: NatsConnection;
  /** The permission violations the server reported on `nc` (one line each), from now on. */
  violations(nc: NatsConnection): () => string;
}

/** The password every user of a test layout has. */
export const passwordOf = (user: string) => `pw-${user}`;

/** Starts the layout's nats-server (every user's password {@link passwordOf}), with no service on it. */
export async function startLayoutNats(source: LayoutSource): Promise<LayoutNats> {
  const prefix = source.shipped ? "leasehold" : source.options.prefix;
  const users = source.shipped ? ["leasehold", "leasehold-append", "auditor"] : natsUsers(source.options).map((u) => u.user);
  const env: Record<string, string> = {
    [servicePasswordEnvOf(prefix)]: passwordOf(serviceUserOf(prefix)),
    [appendPasswordEnvOf(prefix)]: passwordOf(appendUserOf(prefix)),
  };
  for (const user of users)
    if (user !== serviceUserOf(prefix) && user !== appendUserOf(prefix)) env[passwordEnvOf(user)] = passwordOf(user);
  const server: ConfiguredServer = await startConfiguredServer((dir) => {
    const store = join(dir, "js");
    if (!source.shipped) {
      const text = natsConfig({ ...source.options, listen: "127.0.0.1:-1", storeDir: store });
      return source.edit?.(text) ?? text;
    }
    return readFileSync(join(PROJECT_ROOT, "nats.conf"), "utf8")
      .replace(/^listen: .*$/m, "listen: 127.0.0.1:-1")
      .replace(/store_dir: .*$/m, `store_dir: ${JSON.stringify(store)}`);
  }, env);
  const open: NatsConnection[] = [];
  const as = async (user: string | undefined) => {
    const nc = await connect({
      servers: server.url,
      name: user ?? "anonymous",
      maxReconnectAttempts: 0,
      ...(user === undefined ? {} : { user, pass: passwordOf(user), inboxPrefix: inboxPrefixOf(user) }),
    });
    open.push(nc);
    return nc;
  };
  const stopAll = async () => {
    for (const nc of open) await nc.close().catch(() => undefined);
    await server.stop();
  };
  return { prefix, url: server.url, as, stop: stopAll };
}

/** Starts the layout and a service on it (`config` added to the defaults, e.g. `replyCheck: false`). */
export async function startLayout(source: LayoutSource, config: Partial<ServiceConfig> = {}): Promise<LayoutServer> {
  const nats = await startLayoutNats(source);
  const { prefix, url } = nats;
  const as = (user: string | undefined) => nats.as(user);
  const stopAll = () => nats.stop();
  try {
    const answering = await as(serviceUserOf(prefix));
    const appending = await as(appendUserOf(prefix));
    const service = await startService({
      nc: answering,
      appendNc: appending,
      config: resolveConfig({ nats: url, prefix, ...config }),
      logger: quietLogger,
    });
    return {
      prefix,
      url,
      service,
      answering,
      appending,
      as,
      violations,
      async stop() {
        await service.stop();
        await stopAll();
      },
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** The permission violations the server reports on `nc` from now on, one line each. */
export function violations(nc: NatsConnection): () => string {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") seen.push(String((s as { error?: Error }).error?.message));
  })();
  return () => seen.join("\n");
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\$]/g, "\\$&");

/** Waits until `seen` shows the server refusing a publication to `subject`. */
export async function expectPublishRefused(seen: () => string, subject: string): Promise<void> {
  await vi.waitFor(() => expect(seen()).toMatch(new RegExp(`Permissions Violation for Publish to "${escape(subject)}"`)), {
    timeout: 5000,
    interval: 20,
  });
}

/**
 * `leasehold serve` as a process on the layout's server, as its two users and
 * with the flags nats-config prints for `options`; waits until it serves and
 * stops it (SIGTERM) after the test.
 */
export async function serveProcessOn(url: string, options: NatsConfigOptions): Promise<Proc> {
  const { prefix } = options;
  const serve = leasehold(
    ["serve", "--nats", url, "--prefix", prefix, "--log-format", "json", "--http", "off", ...serviceFlagsOf(options)],
    {
      env: {
        LEASEHOLD_USER: serviceUserOf(prefix),
        LEASEHOLD_PASSWORD: passwordOf(serviceUserOf(prefix)),
        LEASEHOLD_APPEND_USER: appendUserOf(prefix),
        LEASEHOLD_APPEND_PASSWORD: passwordOf(appendUserOf(prefix)),
      },
    },
  );
  defer(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
  });
  await waitForLog(serve, "leasehold serving");
  return serve;
}
