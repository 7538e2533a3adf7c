import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { Counter, Gauge } from 'prom-client';
import type { Logger } from '../kernel/log';
import { metricsRegistry } from '../kernel/metrics';

/**
 * The upload of decision events to a collector speaking OPA's decision log API, and the buffer of
 * those it has not yet taken. The buffer is bounded in events and in bytes (of each event's JSON as
 * uploaded, UTF-8): with the collector down, checks carrying large resources filled an
 * events-only bound of 100 000 with hundreds of MiB.
 */
export interface UploadOptions {
  url: string;
  token?: string;
  bufferEvents: number;
  bufferBytes: number;
  batchEvents: number;
  flushMs: number;
  timeoutMs: number;
}

/** Why an event was dropped: the buffer past a bound (the oldest go), or one event too large to keep. */
export type DropReason = 'buffer_full' | 'event_too_large';

const dropped = new Counter({
  name: 'decision_log_dropped_total',
  help: 'Decision log events dropped: the oldest when the upload buffer is past DECISION_LOG_BUFFER_EVENTS or DECISION_LOG_BUFFER_BYTES (buffer_full), or an event too large to log (event_too_large)',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});
// Both series from the start, so a rate or an alert has them before the first drop.
for (const reason of ['buffer_full', 'event_too_large'] satisfies DropReason[]) dropped.inc({ reason }, 0);

export function countDropped(reason: DropReason, count = 1): void {
  dropped.inc({ reason }, count);
}

const bufferBytes = new Gauge({
  name: 'decision_log_buffer_bytes',
  help: 'Bytes (JSON, UTF-8) of the decision log events waiting for DECISION_LOG_URL',
  registers: [metricsRegistry],
});
const uploaded = new Counter({
  name: 'decision_log_uploaded_total',
  help: 'Decision log events accepted by DECISION_LOG_URL',
  registers: [metricsRegistry],
});
const uploadFailures = new Counter({
  name: 'decision_log_upload_failures_total',
  help: 'Decision log batches the collector did not accept (retried with backoff)',
  registers: [metricsRegistry],
});

const gzipAsync = promisify(gzip);
const encoder = new TextEncoder();
const OPEN = encoder.encode('[');
const COMMA = encoder.encode(',');
const CLOSE = encoder.encode(']');

interface Unsent {
  /** Orders the events, so the ones a batch sent are known however many were dropped meanwhile. */
  seq: number;
  /**
   * The event's JSON in UTF-8: its own memory, exactly as long as what is counted (a string may
   * take twice its UTF-8 length, or share its text with others), and the object graph is gone.
   */
  json: Uint8Array;
}

export class DecisionUploader {
  private unsent: Unsent[] = [];
  private unsentBytes = 0;
  private nextSeq = 0;
  private uploading: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private failures = 0;
  private nextUploadAt = 0;

  constructor(
    private readonly options: UploadOptions,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.upload(), options.flushMs);
    this.timer.unref();
  }

  /** Buffers events (JSON texts), dropping the oldest past either bound. */
  add(texts: readonly string[]): void {
    let added = 0;
    for (const text of texts) {
      const json = encoder.encode(text);
      // Kept, it would push out every other event and then itself.
      if (json.length > this.options.bufferBytes) {
        countDropped('event_too_large');
        continue;
      }
      this.unsent.push({ seq: this.nextSeq++, json });
      added += json.length;
    }
    this.unsentBytes += added;
    bufferBytes.inc(added);
    let overflow = 0;
    let freed = 0;
    while (this.unsent.length - overflow > this.options.bufferEvents || this.unsentBytes - freed > this.options.bufferBytes) {
      freed += this.unsent[overflow]!.json.length;
      overflow += 1;
    }
    if (overflow > 0) {
      // The oldest go first: the newest say most about the policy serving now.
      this.release(overflow, freed);
      countDropped('buffer_full', overflow);
    }
    if (this.unsent.length >= this.options.batchEvents) void this.upload();
  }

  /** One batch at a time, gzip JSON array as OPA's decision log service API takes it. */
  private upload(): Promise<void> {
    const { options } = this;
    if (this.uploading || this.unsent.length === 0 || Date.now() < this.nextUploadAt) return this.uploading ?? Promise.resolve();
    const batch = this.unsent.slice(0, options.batchEvents);
    const lastSeq = batch.at(-1)!.seq;
    this.uploading = (async () => {
      try {
        const body = await gzipAsync(jsonArray(batch));
        const response = await fetch(options.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-encoding': 'gzip',
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          },
          body,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        if (!response.ok) throw new Error(`the collector answered ${response.status}`);
        // Events dropped meanwhile were the oldest: the batch's survivors lead the buffer.
        const sent = this.unsent.findIndex((event) => event.seq > lastSeq);
        const count = sent === -1 ? this.unsent.length : sent;
        this.release(
          count,
          this.unsent.slice(0, count).reduce((sum, event) => sum + event.json.length, 0),
        );
        uploaded.inc(batch.length);
        this.failures = 0;
        this.nextUploadAt = 0;
      } catch (error) {
        uploadFailures.inc();
        this.failures += 1;
        this.nextUploadAt = Date.now() + Math.min(options.flushMs * 2 ** this.failures, 60_000);
        this.log.warn(
          { err: { message: (error as Error).message }, unsent: this.unsent.length, unsentBytes: this.unsentBytes },
          'decision log upload failed',
        );
      } finally {
        this.uploading = undefined;
      }
    })();
    return this.uploading;
  }

  /** Removes the `count` oldest events, `bytes` long together. */
  private release(count: number, bytes: number): void {
    this.unsent.splice(0, count);
    this.unsentBytes -= bytes;
    bufferBytes.dec(bytes);
  }

  /**
   * Graceful shutdown: tries to upload what waits within `timeoutMs`, not waiting longer for an
   * upload in flight (a collector that hangs holds one for its whole timeout), then lets go of the
   * rest.
   */
  async close(timeoutMs: number): Promise<void> {
    clearInterval(this.timer);
    const until = Date.now() + timeoutMs;
    this.nextUploadAt = 0;
    while (this.unsent.length > 0 && Date.now() < until) {
      const before = this.unsent.length;
      let deadline: NodeJS.Timeout | undefined;
      await Promise.race([this.upload(), new Promise((resolve) => (deadline = setTimeout(resolve, until - Date.now())))]);
      clearTimeout(deadline);
      if (this.unsent.length >= before) break;
    }
    this.release(this.unsent.length, this.unsentBytes);
  }
}

/** The events as one JSON array, as the collector takes a batch. */
function jsonArray(events: readonly Unsent[]): Buffer {
  const parts: Uint8Array[] = [OPEN];
  for (const [i, event] of events.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(event.json);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}
