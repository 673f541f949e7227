/** Session requests (1.2) for integration tests: the reply body, and a client of the four session endpoints of one prefix. */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Session } from "../../src/contract/messages.ts";
import { call, type Reply } from "./nats.ts";

/** A session reply body: a session (or null), the locks it holds, or an error. */
export interface SessionBody {
  readonly session?: Session | null;
  readonly locks?: readonly string[];
  readonly lease?: { readonly session?: string };
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

/** Requests to `session.open|keepalive|close|get` of one prefix. */
export interface SessionClient {
  open(body: unknown): Promise<Reply<SessionBody>>;
  keepalive(body: unknown): Promise<Reply<SessionBody>>;
  close(body: unknown): Promise<Reply<SessionBody>>;
  get(body: unknown): Promise<Reply<SessionBody>>;
}

/** A session client for `prefix` on `nc`. */
export function sessionClient(nc: NatsConnection, prefix: string): SessionClient {
  const op = (name: string) => (body: unknown) => call<SessionBody>(nc, prefix, `session.${name}`, body);
  return { open: op("open"), keepalive: op("keepalive"), close: op("close"), get: op("get") };
}
