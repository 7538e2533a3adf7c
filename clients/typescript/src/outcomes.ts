export interface OutcomeReport {
  callId: string;
  outcome: 'succeeded' | 'failed';
  durationMs?: number;
  errorCode?: string;
}

export type OutcomeStatus = 'recorded' | 'outcome_already_recorded' | 'call_denied' | 'outcome_too_late' | 'not_found';

export interface OutcomeBatchOptions {
  /** How long a reported outcome may wait for others to share its request (default 20 ms). */
  maxDelayMs?: number;
  /** Outcomes per request, 1..100 (default 100): a full batch is sent at once. */
  maxBatch?: number;
  /**
   * Outcomes held at most, sent or not (default 10 000). Past it the oldest is dropped and handed
   * to `onDropped`: memory stays bounded when the service is gone for long; its record stays
   * `pending`, as for any broker that never reported.
   */
  maxQueued?: number;
  /** The longest wait between two attempts while the service does not answer (default 5 s). */
  maxRetryDelayMs?: number;
}

type Send = (batch: OutcomeReport[]) => Promise<{ callId: string; status: OutcomeStatus }[]>;

/** What did not go as planned: an outcome the service refused, one dropped for room, a batch that could not be sent (it is sent again). */
export type OutcomeTrouble =
  | { kind: 'refused'; report: OutcomeReport; status: Exclude<OutcomeStatus, 'recorded' | 'outcome_already_recorded'> }
  | { kind: 'dropped'; report: OutcomeReport }
  | { kind: 'unreachable'; cause: unknown; pending: number };

/**
 * Outcomes reported off the call's path: `add` returns at once, and the outcomes go in batches
 * (`POST /api/broker/outcomes`), one request at a time. The service makes a batch durable before
 * it answers; a batch it did not answer is sent again, and what an earlier send recorded then
 * answers `outcome_already_recorded`, so nothing is recorded twice. What a process holds here
 * when it dies (queued, or sent and not answered) is not recorded by it: those records stay
 * `pending`, the state the trail gives a call whose broker never said how it went.
 */
export class OutcomeBatcher {
  private readonly queue: OutcomeReport[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private sending: Promise<void> | undefined;
  private failures = 0;
  private readonly maxDelayMs: number;
  private readonly maxBatch: number;
  private readonly maxQueued: number;
  private readonly maxRetryDelayMs: number;

  constructor(
    private readonly send: Send,
    private readonly onTrouble: (trouble: OutcomeTrouble) => void,
    options: OutcomeBatchOptions = {},
  ) {
    this.maxDelayMs = options.maxDelayMs ?? 20;
    this.maxBatch = Math.min(100, Math.max(1, options.maxBatch ?? 100));
    this.maxQueued = Math.max(2 * this.maxBatch, options.maxQueued ?? 10_000);
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 5_000;
  }

  /** Outcomes held: queued or in the request in flight. */
  get pending(): number {
    return this.queue.length;
  }

  add(report: OutcomeReport): void {
    // The oldest goes, never one in the request in flight (it is acknowledged or sent again).
    if (this.queue.length >= this.maxQueued)
      this.onTrouble({ kind: 'dropped', report: this.queue.splice(this.sending ? this.maxBatch : 0, 1)[0]! });
    this.queue.push(report);
    // While a request is out, or the service is not answering, the next send is already planned.
    if (this.sending || this.failures > 0) return;
    if (this.queue.length >= this.maxBatch) this.schedule(0);
    else this.schedule(this.maxDelayMs);
  }

  /** Sends everything held now; resolves once the service acknowledged it, or rejects when it cannot be reached before `signal` aborts. */
  async flush(signal?: AbortSignal): Promise<void> {
    while (this.queue.length > 0) {
      signal?.throwIfAborted();
      if (this.sending) await this.sending;
      else await this.sendNext();
      if (this.failures > 0) await sleep(this.retryDelay(), signal);
    }
  }

  private schedule(delayMs: number): void {
    if (this.timer) {
      if (delayMs > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sendNext();
    }, delayMs);
    // A queued outcome does not keep a process alive on its own: `flush` before exiting.
    (this.timer as { unref?: () => void }).unref?.();
  }

  private sendNext(): Promise<void> {
    if (this.sending || this.queue.length === 0) return this.sending ?? Promise.resolve();
    // Kept in the queue until acknowledged: a process that dies mid-request has not lost track of them.
    const batch = this.queue.slice(0, this.maxBatch);
    this.sending = this.send(batch).then(
      (results) => {
        this.failures = 0;
        this.queue.splice(0, batch.length);
        results.forEach((result, index) => {
          if (result.status !== 'recorded' && result.status !== 'outcome_already_recorded')
            this.onTrouble({ kind: 'refused', report: batch[index]!, status: result.status });
        });
      },
      (cause: unknown) => {
        this.failures += 1;
        if (this.failures === 1) this.onTrouble({ kind: 'unreachable', cause, pending: this.queue.length });
      },
    );
    return this.sending.finally(() => {
      this.sending = undefined;
      if (this.queue.length > 0)
        this.schedule(this.failures > 0 ? this.retryDelay() : this.queue.length >= this.maxBatch ? 0 : this.maxDelayMs);
    });
  }

  private retryDelay(): number {
    return Math.min(this.maxRetryDelayMs, 100 * 2 ** Math.min(this.failures, 10));
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
