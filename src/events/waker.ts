import { Client } from 'pg';
import type { Logger } from '../kernel/log';
import { EVENTS_CHANNEL, listenForEvents } from './repository';

/** A registration for one wake-up: made before the re-check so a NOTIFY in between is not lost. */
export interface Wakeup {
  /** Resolves on a notification for the agent, or after `ms`, whichever comes first. */
  wait(ms: number): Promise<void>;
  cancel(): void;
}

const RECONNECT_DELAY_MS = 1000;
const CONNECT_TIMEOUT_MS = 5000;

/**
 * One LISTEN connection per process, shared by every long poll. A notification (payload = agent
 * id, sent at commit by emitEvent) wakes that agent's waiting polls early; it is only a hint:
 * pollers re-check on a timer too, so a lost notification or a dropped connection costs latency,
 * never an event. Connects lazily, on the first long poll.
 */
export class EventWaker {
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly databaseUrl: string,
    private readonly log: Logger,
  ) {}

  subscribe(agentId: string): Wakeup {
    let wake: () => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    const fired = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const set = this.waiters.get(agentId) ?? new Set();
    set.add(wake);
    this.waiters.set(agentId, set);
    const cancel = () => {
      if (timer) clearTimeout(timer);
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(agentId) === set) this.waiters.delete(agentId);
      wake();
    };
    return {
      async wait(ms) {
        timer = setTimeout(cancel, ms);
        await fired;
        cancel();
      },
      cancel,
    };
  }

  /**
   * Starts listening if not yet, waiting at most `maxWaitMs` for it; never throws. A poll that
   * goes on before the listener is up still finds its events through the timed re-check.
   */
  async ensureListening(maxWaitMs = CONNECT_TIMEOUT_MS): Promise<void> {
    if (this.client || this.closed) return;
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.connecting, new Promise((resolve) => (timer = setTimeout(resolve, maxWaitMs)))]);
    clearTimeout(timer);
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  /** The Postgres backend pid of the LISTEN connection (to find it in pg_stat_activity). */
  get backendPid(): number | undefined {
    return (this.client as (Client & { processID?: number }) | undefined)?.processID;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    this.wakeAll();
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.databaseUrl,
      application_name: 'grant-broker-events',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    client.on('notification', (message) => {
      if (message.channel === EVENTS_CHANNEL && message.payload) this.wake(message.payload);
    });
    client.on('error', (err) => this.dropped(client, err));
    client.on('end', () => this.dropped(client));
    try {
      await client.connect();
      await listenForEvents(client);
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'events LISTEN unavailable; long polls fall back to timed re-checks');
      await client.end().catch(() => undefined);
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    // Anything committed while no listener was up was not heard: let waiting polls re-check now.
    this.wakeAll();
  }

  private dropped(client: Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.closed) return;
    this.log.warn({ err: err && { message: err.message } }, 'events LISTEN connection lost; reconnecting');
    const retry = setTimeout(() => void this.ensureListening(), RECONNECT_DELAY_MS);
    retry.unref();
  }

  private wake(agentId: string): void {
    for (const wake of this.waiters.get(agentId) ?? []) wake();
  }

  private wakeAll(): void {
    for (const agentId of this.waiters.keys()) this.wake(agentId);
  }
}
