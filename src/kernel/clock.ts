/**
 * Where the time comes from. The service runs on the system clock; tests give it one they move,
 * so expiry and leases are tested without sleeping. Every fact a decision depends on (expiries of
 * grants and tokens, event leases, `now_ms` of every policy input) and every time the API shows
 * as a fact (`revokedAt`, `createdAt`) comes from here. Budgets are the exception by contract:
 * their windows run on Redis's clock. Postgres's now() stamps only bookkeeping (when
 * an event was acknowledged, when an agent last polled), and waits run on the timers.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
