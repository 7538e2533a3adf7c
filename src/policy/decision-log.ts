import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { Counter } from 'prom-client';
import { jsonLineWriter, type Logger } from '../kernel/log';
import type { InputJson } from './input-json';
import { metricsRegistry } from '../kernel/metrics';

/**
 * Decision logs in OPA's event format (CONTRACT §11): `decision_id`, `path`, `input` (masked),
 * `result`, `timestamp`, `bundles`, `labels`, `metrics`, and `masked` naming what was replaced,
 * as OPA's `system.log.mask` upserts do. A decision only queues its event: serializing, writing
 * and uploading happen after the answer has left, in batches, so a check never waits for them.
 */
export type DecisionLogMode = 'off' | 'deny' | 'all' | 'sampled';

export interface DecisionEvent {
  decision_id: string;
  path: string;
  input: object;
  result: object;
  timestamp: string;
  bundles: { policy: { revision: string } };
  labels: { id: string; version: string };
  metrics: { timer_rego_query_eval_ns: number };
  masked?: string[];
  erased?: string[];
}

/**
 * An event as it is queued: its input already JSON (the text the policy read, masked), so neither
 * the log nor the uploader serializes the input again.
 */
interface QueuedEvent extends Omit<DecisionEvent, 'input'> {
  inputJson: string;
}

/** What a `system.log.mask` rule returns: a JSON pointer to erase, or a value to put at one. */
export type MaskOp = string | { op: 'upsert' | 'remove'; path: string; value?: unknown };

/**
 * Replaced wherever it appears at the top of an input: the call's arguments (CONTRACT §10: never
 * logged unmasked). `resource`, the repository, ref and path the tool's pointers read from them,
 * is kept: it is what an audit asks ("who wrote to acme/api main?") and what `policy impact` must
 * replay to judge a rule about resources. An org that must not log it erases it with its own
 * `system.log.mask` (then impact reports those decisions as not replayable).
 */
export const MASKED_FIELDS: readonly string[] = ['args'];
export const MASK = '**REDACTED**';

const dropped = new Counter({
  name: 'decision_log_dropped_total',
  help: 'Decision log events dropped because the upload buffer was full (the collector unreachable for too long)',
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

export interface DecisionLogOptions {
  mode: DecisionLogMode;
  /** `sampled`: the share of allowed decisions logged (every denial is). */
  sampleRate?: number;
  /** `sampled`: a number in [0, 1) per allowed decision (Math.random; a test passes its own). */
  random?: () => number;
  log: Logger;
  version: string;
  upload?: { url: string; bufferEvents: number; batchEvents: number; flushMs: number; timeoutMs: number; token?: string };
}

const gzipAsync = promisify(gzip);

/**
 * How long a queued decision waits for the others to share its write. Each write is a system call
 * and, through pino's asynchronous destination, a hop to libuv's thread pool and back: at a steady
 * 1 000 checks/s, a write per check cost about 3 % of the service's CPU (`npm run bench`, A/B).
 * After 10 ms it is one write per ten checks or more. Events keep their own timestamps, and
 * shutdown writes what is queued (`close`).
 */
export const DECISION_WRITE_DELAY_MS = 10;

export class DecisionLog {
  private readonly labels: { id: string; version: string };
  private pending: QueuedEvent[] = [];
  /** The JSON of each event handed to the uploader and not yet accepted by the collector. */
  private unsent: string[] = [];
  private writeTimer: NodeJS.Timeout | undefined;
  private uploading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private nextUploadAt = 0;
  private masker: () => ((event: DecisionEvent) => MaskOp[]) | undefined = () => undefined;

  /** Writes a batch of events (JSON text) as `decision` lines of the log, in one write. */
  private readonly writeLines: (events: readonly string[]) => void;

  constructor(private readonly options: DecisionLogOptions) {
    this.labels = { id: randomUUID(), version: options.version };
    this.writeLines = jsonLineWriter(options.log, 'decision');
    if (options.upload) {
      this.timer = setInterval(() => void this.upload(), options.upload.flushMs);
      this.timer.unref();
    }
  }

  /** The policy's own mask rules (system.log.mask), applied to each event before it is written. */
  useMasker(masker: () => ((event: DecisionEvent) => MaskOp[]) | undefined): void {
    this.masker = masker;
  }

  wants(allowed: boolean): boolean {
    switch (this.options.mode) {
      case 'off':
        return false;
      case 'deny':
        return !allowed;
      case 'sampled':
        return !allowed || (this.options.random ?? Math.random)() < (this.options.sampleRate ?? 0.1);
      case 'all':
        return true;
    }
  }

  /**
   * Queues one decision. `input` is the JSON the policy read, `args` already masked in it
   * (./input-json.ts): nothing here serializes it again.
   */
  record(decisionId: string, path: string, input: InputJson, result: object, revision: string, evalNs: number): void {
    this.pending.push({
      decision_id: decisionId,
      path,
      inputJson: input.logged,
      result,
      timestamp: new Date().toISOString(),
      bundles: { policy: { revision } },
      labels: this.labels,
      metrics: { timer_rego_query_eval_ns: evalNs },
      // Shared, not copied: only applyMask adds to it, and it copies first.
      ...(input.masked.length > 0 ? { masked: input.masked as string[] } : {}),
    });
    if (!this.writeTimer) {
      this.writeTimer = setTimeout(() => this.write(), DECISION_WRITE_DELAY_MS);
      this.writeTimer.unref();
    }
  }

  /** Writes what is queued to the log, and hands it to the uploader. */
  private write(): void {
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    const events = this.pending;
    this.pending = [];
    const mask = this.masker();
    if (mask) for (const event of events) applyMask(event, mask);
    const texts = events.map(eventJson);
    this.writeLines(texts);
    if (!this.options.upload) return;
    this.unsent.push(...texts);
    const overflow = this.unsent.length - this.options.upload.bufferEvents;
    if (overflow > 0) {
      // The oldest go first: the newest say most about the policy serving now.
      this.unsent.splice(0, overflow);
      dropped.inc(overflow);
    }
    if (this.unsent.length >= this.options.upload.batchEvents) void this.upload();
  }

  /** One batch at a time, gzip JSON array as OPA's decision log service API takes it. */
  private upload(): Promise<void> {
    const upload = this.options.upload;
    if (!upload || this.uploading || this.unsent.length === 0 || Date.now() < this.nextUploadAt) return this.uploading ?? Promise.resolve();
    const batch = this.unsent.slice(0, upload.batchEvents);
    this.uploading = (async () => {
      try {
        const body = await gzipAsync(`[${batch.join(',')}]`);
        const response = await fetch(upload.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'content-encoding': 'gzip',
            ...(upload.token ? { authorization: `Bearer ${upload.token}` } : {}),
          },
          body,
          signal: AbortSignal.timeout(upload.timeoutMs),
        });
        if (!response.ok) throw new Error(`the collector answered ${response.status}`);
        // Events dropped meanwhile may have shifted the buffer: remove exactly those sent.
        const sent = new Set(batch);
        this.unsent = this.unsent.filter((event) => !sent.has(event));
        uploaded.inc(batch.length);
        this.failures = 0;
        this.nextUploadAt = 0;
      } catch (error) {
        uploadFailures.inc();
        this.failures += 1;
        this.nextUploadAt = Date.now() + Math.min(upload.flushMs * 2 ** this.failures, 60_000);
        this.options.log.warn({ err: { message: (error as Error).message }, unsent: this.unsent.length }, 'decision log upload failed');
      } finally {
        this.uploading = undefined;
      }
    })();
    return this.uploading;
  }

  /** Graceful shutdown: write what is queued and try to upload the rest within the time given. */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.write();
    const until = Date.now() + timeoutMs;
    this.nextUploadAt = 0;
    while (this.options.upload && this.unsent.length > 0 && Date.now() < until) {
      const before = this.unsent.length;
      await this.upload();
      if (this.unsent.length >= before) break;
    }
  }
}

/** The event in OPA's format, its input the queued JSON text. */
function eventJson({ inputJson, ...fields }: QueuedEvent): string {
  const rest = JSON.stringify(fields);
  return `${rest.slice(0, -1)},"input":${inputJson}}`;
}

/**
 * OPA's mask semantics: a string (or `{op: "remove"}`) erases the value at that pointer and lists
 * it in `erased`; `{op: "upsert", path, value}` puts the value there and lists it in `masked`.
 * The input is parsed from the queued text, so the object the service evaluated is never touched.
 * A mask rule that fails masks nothing more (the built-in masking of `args` has already happened).
 */
function applyMask(queued: QueuedEvent, mask: (event: DecisionEvent) => MaskOp[]): void {
  const { inputJson, ...fields } = queued;
  const event: DecisionEvent = { ...fields, input: JSON.parse(inputJson) as object };
  if (fields.masked) event.masked = [...fields.masked];
  let ops: MaskOp[];
  try {
    ops = mask(event);
  } catch {
    return;
  }
  if (ops.length === 0) return;
  event.result = structuredClone(event.result);
  for (const op of ops) {
    const path = typeof op === 'string' ? op : op.path;
    const [root, ...rest] = path
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
    if ((root !== 'input' && root !== 'result') || rest.length === 0) continue;
    const parent = rest
      .slice(0, -1)
      .reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), event[root]);
    if (!parent || typeof parent !== 'object') continue;
    const key = rest.at(-1)!;
    if (typeof op === 'string' || op.op === 'remove') {
      if (!Object.hasOwn(parent, key)) continue;
      delete (parent as Record<string, unknown>)[key];
      (event.erased ??= []).push(path);
    } else {
      (parent as Record<string, unknown>)[key] = op.value;
      (event.masked ??= []).push(path);
    }
  }
  Object.assign(queued, { inputJson: JSON.stringify(event.input), result: event.result });
  if (event.masked) queued.masked = event.masked;
  if (event.erased) queued.erased = event.erased;
}
