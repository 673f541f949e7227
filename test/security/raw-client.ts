/**
 * A NATS client that writes the protocol by hand, for what a well-behaved
 * client library never sends: a header block with a name the protocol does
 * not allow, or without the blank line that ends it. It logs in, subscribes
 * to one inbox, publishes with any header block, and reads what comes back.
 */
import { connect as tcpConnect, type Socket } from "node:net";

/** One message the raw client received on its inbox. */
export interface RawReply {
  readonly headers: string;
  readonly payload: string;
}

export interface RawClient {
  /** The subject replies reach this client on (`<prefix>.<n>` for the n-th request). */
  readonly inbox: string;
  /** Publishes `payload` on `subject` with the header block `headers` exactly as given, replies to `reply`. */
  publish(subject: string, headers: string, payload: string, reply?: string): void;
  /** Resolves once the server answered a PING sent after everything published so far (it has read them). */
  flush(): Promise<void>;
  /** The next message on the inbox, within `timeoutMs`. */
  next(timeoutMs: number): Promise<RawReply>;
  close(): void;
}

/** Connects to `url` (nats://host:port) as `user`/`pass`; replies come to `<inboxPrefix>.raw`. */
export async function rawClient(url: string, user: string, pass: string, inboxPrefix: string): Promise<RawClient> {
  const { hostname, port } = new URL(url);
  const socket: Socket = tcpConnect(Number(port), hostname);
  let buffer = Buffer.alloc(0);
  const replies: RawReply[] = [];
  const waiting: (() => void)[] = [];
  let pong: (() => void) | undefined;
  let failure: Error | undefined;
  socket.on("error", (e) => (failure = e));
  socket.on("data", (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const end = buffer.indexOf("\r\n");
      if (end < 0) return;
      const line = buffer.subarray(0, end).toString("latin1");
      if (line.startsWith("HMSG ") || line.startsWith("MSG ")) {
        const parts = line.split(" ");
        const total = Number(parts.at(-1));
        const headerLength = line.startsWith("HMSG ") ? Number(parts.at(-2)) : 0;
        if (buffer.length < end + 2 + total + 2) return;
        const body = buffer.subarray(end + 2, end + 2 + total);
        replies.push({ headers: body.subarray(0, headerLength).toString("utf8"), payload: body.subarray(headerLength).toString("utf8") });
        buffer = buffer.subarray(end + 2 + total + 2);
        waiting.shift()?.();
        continue;
      }
      buffer = buffer.subarray(end + 2);
      if (line === "PING") socket.write("PONG\r\n");
      else if (line === "PONG") pong?.();
      else if (line.startsWith("-ERR")) failure = new Error(line);
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const inbox = `${inboxPrefix}.raw`;
  const connectLine = { verbose: false, pedantic: false, headers: true, no_responders: true, user, pass, name: `raw-${user}` };
  socket.write(`CONNECT ${JSON.stringify(connectLine)}\r\nSUB ${inbox} 1\r\nPING\r\n`);
  await new Promise<void>((resolve, reject) => {
    pong = resolve;
    setTimeout(() => reject(failure ?? new Error("no PONG from the server")), 5000);
  });
  if (failure !== undefined) throw failure;
  return {
    inbox,
    publish(subject, headers, payload, reply = inbox) {
      const h = Buffer.from(headers, "utf8");
      const p = Buffer.from(payload, "utf8");
      socket.write(`HPUB ${subject} ${reply} ${h.length} ${h.length + p.length}\r\n`);
      socket.write(Buffer.concat([h, p, Buffer.from("\r\n")]));
    },
    flush() {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(failure ?? new Error("no PONG from the server")), 5000);
        pong = () => {
          clearTimeout(timer);
          resolve();
        };
        socket.write("PING\r\n");
      });
    },
    async next(timeoutMs) {
      if (replies.length === 0) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(failure ?? new Error(`no reply on ${inbox} within ${timeoutMs} ms`)), timeoutMs);
          waiting.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return replies.shift()!;
    },
    close() {
      socket.destroy();
    },
  };
}
