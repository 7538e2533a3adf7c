/**
 * Where the time comes from. The service runs on the system clock; tests give it one they move,
 * so expiry and leases are tested without sleeping. Budgets are the exception by contract: their
 * windows run on Redis's clock (CONTRACT §5).
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
