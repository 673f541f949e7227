/**
 * Stored messages packed for a worker thread: a batch is a few flat buffers
 * (transferred, not copied) instead of one cloned object per message.
 */
import type { StoredMessage } from "../events/event-log.ts";

/** Messages per batch handed to a worker. */
export const BATCH_MESSAGES = 4096;

/**
 * Messages in stream order, packed: message i has sequence `seqs[i]`, stored
 * time `times[i]` (epoch ms), messages still to come after it `pendings[i]`,
 * subject number `subjectIds[i]`, payload `bytes[idEnds[i-1] ?? 0 .. ends[i]]`
 * and, when the reader asked for it, its message id: the ASCII bytes
 * `bytes[ends[i] .. idEnds[i]]` where the message gave them without a
 * header parse (src/events/msg-id-header.ts), else `msgIds[i]` ("" for
 * none). The buffers are transferred, not copied.
 *
 * Subjects are numbered in the order they first appear, and each is sent
 * once: `newSubjects` are the subjects numbered from this batch on, in
 * order. A stream has far fewer subjects than messages, so this clones a
 * few strings per batch instead of one per message, and the worker's
 * lookups by subject meet the same string each time. With `resetSubjects`
 * the numbering starts again from 0 at this batch (the table is bounded).
 */
export interface FoldBatch {
  readonly type: "batch";
  readonly count: number;
  readonly seqs: ArrayBuffer;
  readonly times: ArrayBuffer;
  readonly pendings: ArrayBuffer;
  readonly ends: ArrayBuffer;
  readonly idEnds: ArrayBuffer;
  readonly bytes: ArrayBuffer;
  readonly subjectIds: ArrayBuffer;
  readonly msgIds: readonly string[] | undefined;
  readonly newSubjects: readonly string[];
  readonly resetSubjects: boolean;
}

/** Batches of messages, packed into fresh buffers (each is transferred away). */
export class BatchPacker {
  count = 0;
  private seqs = new Float64Array(BATCH_MESSAGES);
  private times = new Float64Array(BATCH_MESSAGES);
  private pendings = new Float64Array(BATCH_MESSAGES);
  private ends = new Uint32Array(BATCH_MESSAGES);
  private idEnds = new Uint32Array(BATCH_MESSAGES);
  private subjectIds = new Int32Array(BATCH_MESSAGES);
  private msgIds: string[] | undefined;
  /** Every subject numbered so far (see FoldBatch), at most `maxSubjects` before the numbering starts again. */
  private readonly numbered = new Map<string, number>();
  private newSubjects: string[] = [];
  private resetSubjects = false;
  private bytes: Uint8Array<ArrayBuffer>;
  private used = 0;

  constructor(
    private readonly maxSubjects: number,
    private bytesHint = 256 * 1024,
  ) {
    this.bytes = new Uint8Array(bytesHint);
  }

  /** Adds one message, with its message id when `withMsgId`; true when the batch is full. */
  add(m: StoredMessage, withMsgId = false): boolean {
    const i = this.count++;
    this.copy(m.payload);
    this.ends[i] = this.used;
    if (withMsgId) {
      const idBytes = m.msgIdBytes?.();
      if (idBytes !== undefined) this.copy(idBytes);
      else {
        const msgId = m.msgId;
        if (msgId !== undefined) (this.msgIds ??= new Array<string>(BATCH_MESSAGES).fill(""))[i] = msgId;
      }
    }
    this.idEnds[i] = this.used;
    this.seqs[i] = m.seq;
    this.times[i] = m.time;
    this.pendings[i] = m.pending ?? 0;
    let id = this.numbered.get(m.subject);
    if (id === undefined) {
      id = this.numbered.size;
      this.numbered.set(m.subject, id);
      this.newSubjects.push(m.subject);
    }
    this.subjectIds[i] = id;
    return this.count === BATCH_MESSAGES;
  }

  private copy(bytes: Uint8Array): void {
    const size = bytes.length;
    if (this.used + size > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.used + size));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    this.bytes.set(bytes, this.used);
    this.used += size;
  }

  /** The batch so far and the buffers to transfer; starts a new one. */
  take(): { batch: FoldBatch; transfer: ArrayBuffer[] } {
    const batch: FoldBatch = {
      type: "batch",
      count: this.count,
      seqs: this.seqs.buffer,
      times: this.times.buffer,
      pendings: this.pendings.buffer,
      ends: this.ends.buffer,
      idEnds: this.idEnds.buffer,
      bytes: this.bytes.buffer,
      subjectIds: this.subjectIds.buffer,
      msgIds: this.msgIds?.slice(0, this.count),
      newSubjects: this.newSubjects,
      resetSubjects: this.resetSubjects,
    };
    // Bounded: past maxSubjects, the next batch numbers its subjects from 0 again (and says so).
    this.resetSubjects = this.numbered.size >= this.maxSubjects;
    if (this.resetSubjects) this.numbered.clear();
    // The next batch starts at the size this one needed: few regrowths, little slack.
    this.bytesHint = Math.max(this.bytesHint, this.used);
    this.seqs = new Float64Array(BATCH_MESSAGES);
    this.times = new Float64Array(BATCH_MESSAGES);
    this.pendings = new Float64Array(BATCH_MESSAGES);
    this.ends = new Uint32Array(BATCH_MESSAGES);
    this.idEnds = new Uint32Array(BATCH_MESSAGES);
    this.subjectIds = new Int32Array(BATCH_MESSAGES);
    this.msgIds = undefined;
    this.newSubjects = [];
    this.bytes = new Uint8Array(this.bytesHint);
    this.used = 0;
    this.count = 0;
    const transfer = [batch.seqs, batch.times, batch.pendings, batch.ends, batch.idEnds, batch.bytes, batch.subjectIds];
    return { batch, transfer };
  }
}

/** Unpacks batches on the worker's side, keeping the subject table the packer's numbering refers to. */
export class BatchUnpacker {
  /** Subjects by number, as the main thread numbered them. */
  private readonly subjects: string[] = [];
  /** How often the numbering started again (what a job remembers by subject number is void after each). */
  resets = 0;

  /** Calls `visit` with each message of `batch`, in order, and its subject's number. */
  unpack(batch: FoldBatch, visit: (message: StoredMessage, subject: number) => void): void {
    if (batch.resetSubjects) {
      this.subjects.length = 0;
      this.resets++;
    }
    for (const subject of batch.newSubjects) this.subjects.push(subject);
    const bytes = new Uint8Array(batch.bytes);
    const text = Buffer.from(batch.bytes); // a view, for the message ids' ASCII
    const seqs = new Float64Array(batch.seqs);
    const times = new Float64Array(batch.times);
    const pendings = new Float64Array(batch.pendings);
    const ends = new Uint32Array(batch.ends);
    const idEnds = new Uint32Array(batch.idEnds);
    const subjectIds = new Int32Array(batch.subjectIds);
    const msgIds = batch.msgIds;
    let start = 0;
    for (let i = 0; i < batch.count; i++) {
      const end = ends[i]!;
      const idEnd = idEnds[i]!;
      const subject = subjectIds[i]!;
      visit(
        {
          seq: seqs[i]!,
          subject: this.subjects[subject]!,
          payload: bytes.subarray(start, end),
          time: times[i]!,
          pending: pendings[i]!,
          msgId: idEnd > end ? text.toString("latin1", end, idEnd) : msgIds === undefined || msgIds[i] === "" ? undefined : msgIds[i],
        },
        subject,
      );
      start = idEnd;
    }
  }
}
