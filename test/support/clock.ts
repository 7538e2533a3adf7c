import type { Clock } from '../../src/kernel/clock';

/** A clock a test moves: expiry and leases without sleeping. Starts at the wall clock's now. */
export class ManualClock implements Clock {
  private at: number;

  constructor(start = Date.now()) {
    this.at = start;
  }

  now(): number {
    return this.at;
  }

  advance(ms: number): void {
    this.at += ms;
  }
}
