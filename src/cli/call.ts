/**
 * `leasehold call <kind.op> [json]`: sends one request to a running service
 * and prints the reply, for walkthroughs and operators' one-off commands.
 * Exit 0 on success, 1 when the service refuses (a contract error), 2 on a
 * usage or connection error or when no service answers.
 */
import { errors, type NatsConnection } from "@nats-io/nats-core";
import { EXIT, UsageError, ConnectFailure, inboxHint } from "./cli-errors.ts";
import { connectTo, LOCAL_NATS_URL, natsTarget } from "./connection-options.ts";
import type { CommonFlags } from "./options.ts";
import { closestOps, isOp } from "./ops.ts";
import { ERROR_MESSAGE_HEADER, ERROR_STATUS_HEADER } from "../contract/errors.ts";
import { isValidPrefix } from "../contract/subjects.ts";
import { isNoResponders } from "../transport/no-responders.ts";
import { visible, visibleJson } from "../tools/table.ts";

/** Flags of `call`. */
export interface CallFlags extends CommonFlags {
  prefix: string;
  timeoutMs: number;
  pretty?: boolean;
}

/** Sends one request and prints its reply; resolves with the exit code. */
export async function callCommand(kindOp: string, body: string | undefined, flags: CallFlags): Promise<number> {
  if (!/^[a-z]+\.[a-z]+$/.test(kindOp))
    throw new UsageError(`expected <kind>.<op> such as lock.acquire, got ${JSON.stringify(kindOp)} (call --help lists them)`);
  if (!isOp(kindOp)) throw new UsageError(`unknown op ${kindOp}: did you mean ${closestOps(kindOp).join(", ")}? (call --help lists them)`);
  if (!isValidPrefix(flags.prefix))
    throw new UsageError(`--prefix: must be subject tokens of A-Z a-z 0-9 _ - separated by dots, got ${JSON.stringify(flags.prefix)}`);
  const payload = body ?? "{}";
  try {
    JSON.parse(payload);
  } catch (e) {
    throw new UsageError(`the request body is not JSON: ${(e as Error).message}`, { cause: e });
  }
  const target = natsTarget(flags, [LOCAL_NATS_URL]);
  const nc = await connectTo(target, { name: "leasehold-call", maxReconnectAttempts: 0 });
  try {
    return await send(nc, `${flags.prefix}.v1.${kindOp}`, payload, flags);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

async function send(nc: NatsConnection, subject: string, payload: string, flags: CallFlags): Promise<number> {
  let reply;
  try {
    reply = await nc.request(subject, payload, { timeout: flags.timeoutMs });
  } catch (e) {
    if (isNoResponders(e)) {
      throw new ConnectFailure(`no leasehold service answers ${subject} (is a service running with prefix ${flags.prefix}?)`, {
        cause: e,
      });
    }
    if (e instanceof errors.TimeoutError || (e as Error).name === "TimeoutError") {
      throw new ConnectFailure(
        `no reply to ${subject} within ${flags.timeoutMs} ms (--timeout-ms); a change may or may not have been made: send it again with the same requestId to learn which`,
        { cause: e },
      );
    }
    const message = (e as Error).message;
    if (message.includes(`Permissions Violation for Publish to "${subject}"`)) {
      throw new ConnectFailure(
        `this NATS user may not send ${subject}: check --prefix, or the user's permissions (leasehold nats-config --prefix ${flags.prefix})`,
        { cause: e },
      );
    }
    throw new ConnectFailure(`request to ${subject} failed: ${message}${inboxHint(message)}`, { cause: e });
  }
  // What the service answers quotes what clients wrote (a holder's owner): shown, never obeyed by the terminal.
  const text = visibleJson(flags.pretty === true ? pretty(reply.string()) : reply.string());
  const status = reply.headers?.get(ERROR_STATUS_HEADER);
  console.log(text);
  if (status) {
    console.error(visible(`leasehold call: refused: ${status} ${reply.headers?.get(ERROR_MESSAGE_HEADER) ?? ""}`.trimEnd()));
    return EXIT.refused;
  }
  return EXIT.ok;
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
