import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../kernel/clock';
import { plainLineWriter, type LineWriter, type LineWriterFactory, type Logger } from '../kernel/log';
import { countDropped, DecisionUploader, type UploadOptions } from './decision-log-upload';
import type { InputJson } from './input-json';

/**
 * Decision logs in OPA's event format: `decision_id`, `path`, `input` (masked),
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
 * Replaced wherever it appears at the top of an input: the call's arguments (never
 * logged unmasked). `resource`, the repository, ref and path the tool's pointers read from them,
 * is kept: it is what an audit asks ("who wrote to acme/api main?") and what `policy impact` must
 * replay to judge a rule about resources. An org that must not log it erases it with its own
 * `system.log.mask` (then impact reports those decisions as not replayable).
 */
export const MASKED_FIELDS: readonly string[] = ['args'];
export const MASK = '**REDACTED**';

/**
 * The most of a `resource` value an event carries: resources come from the call's arguments, as
 * long as a caller makes them, and a long path in every event would fill the upload buffer. What is
 * cut is marked and named in `masked`, as a mask's upsert would be (so `policy impact` does not
 * replay on a value that is not the call's).
 */
export const RESOURCE_VALUE_MAX_CHARS = 1024;
export const TRUNCATED = '**TRUNCATED**';
/**
 * An event larger than this after the cut is not logged: no request body comes near it (64 KiB at
 * most), and one such event alone would take a sixteenth of the default upload buffer.
 */
export const MAX_EVENT_BYTES = 1024 * 1024;

export interface DecisionLogOptions {
  mode: DecisionLogMode;
  /** `sampled`: the share of allowed decisions logged (every denial is). */
  sampleRate?: number;
  /** `sampled`: a number in [0, 1) per allowed decision (Math.random; a test passes its own). */
  random?: () => number;
  log: Logger;
  /** How batches of events become lines of `log` (plainLineWriter unless a speed-up is given). */
  lineWriter?: LineWriterFactory;
  version: string;
  upload?: UploadOptions;
  /** The service's clock, which stamps each event (a test's own clock then stamps them too). */
  clock?: Clock;
}

/**
 * How long a queued decision waits for the others to share its write. Each write is a system call
 * and, through pino's asynchronous destination, a hop to libuv's thread pool and back, which a
 * write per check pays at every check; a short wait lets a steady load share one write among many
 * checks (with the line writer of src/speedups/log-lines.ts), while no event waits long enough to
 * matter to whoever reads the log. Events keep their own timestamps, and shutdown writes what is
 * queued (`close`).
 */
export const DECISION_WRITE_DELAY_MS = 10;

/** The newest broker checks kept as logged, for the policy playground: so many, within so many bytes. */
const RECENT_CHECKS = 50;
const RECENT_BYTES = 1024 * 1024;
const CHECK_PATH = 'broker/check/decision';

export class DecisionLog {
  private readonly labels: { id: string; version: string };
  private pending: QueuedEvent[] = [];
  private recentChecks: string[] = [];
  private recentBytes = 0;
  private writeTimer: NodeJS.Timeout | undefined;
  private readonly uploader: DecisionUploader | undefined;
  private masker: () => ((event: DecisionEvent) => MaskOp[]) | undefined = () => undefined;

  /** Writes a batch of events (JSON text) as `decision` lines of the log. */
  private readonly writeLines: LineWriter;

  constructor(private readonly options: DecisionLogOptions) {
    this.labels = { id: randomUUID(), version: options.version };
    this.writeLines = (options.lineWriter ?? plainLineWriter)(options.log, 'decision');
    this.uploader = options.upload && new DecisionUploader(options.upload, options.log);
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
      timestamp: new Date((this.options.clock ?? systemClock).now()).toISOString(),
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
    const texts: string[] = [];
    for (const event of events) {
      if (mask) applyMask(event, mask);
      const text = eventJson(event);
      if (this.tooLarge(event, text)) continue;
      texts.push(text);
      if (event.path === CHECK_PATH) this.remember(text);
    }
    this.writeLines(texts);
    this.uploader?.add(texts);
  }

  private remember(text: string): void {
    this.recentChecks.push(text);
    this.recentBytes += text.length;
    while (this.recentChecks.length > RECENT_CHECKS || (this.recentBytes > RECENT_BYTES && this.recentChecks.length > 1)) {
      this.recentBytes -= this.recentChecks.shift()!.length;
    }
  }

  /**
   * The newest broker check events this replica logged (masked as logged), newest first: what the
   * policy playground offers to try again. None when the decision log is off.
   */
  recent(limit: number): DecisionEvent[] {
    return this.recentChecks
      .slice(-limit)
      .reverse()
      .map((text) => JSON.parse(text) as DecisionEvent);
  }

  /** Drops (and counts, and says) an event past MAX_EVENT_BYTES. */
  private tooLarge(event: QueuedEvent, text: string): boolean {
    // UTF-8 takes at most 3 bytes per UTF-16 unit: only a text that long needs measuring.
    if (text.length * 3 <= MAX_EVENT_BYTES) return false;
    const bytes = Buffer.byteLength(text);
    if (bytes <= MAX_EVENT_BYTES) return false;
    countDropped('event_too_large');
    this.options.log.warn({ decision_id: event.decision_id, path: event.path, bytes }, 'decision event too large to log; dropped');
    return true;
  }

  /** Graceful shutdown: write what is queued and try to upload the rest within the time given. */
  async close(timeoutMs = 5000): Promise<void> {
    this.write();
    await this.uploader?.close(timeoutMs);
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
