import type { Grant } from '@grant-broker/client';

interface Entry {
  grant: Promise<Grant>;
  readAtMs: number;
  /** The grant's version as the last check before the read saw it (undefined: none seen yet). */
  version: string | undefined;
}

/**
 * What `tools/list` derives from a grant, read once and kept per grant rather than read on every
 * listing. Kept while the checks of its calls see the version it was read under (`grantVersion`
 * in each check's answer: it moves with any change to the grant's tree) and no check is refused;
 * a change no check has seen yet is picked up within `maxAgeMs`. Only the listing rests on it: every
 * call is checked by the grant broker whatever this holds. Bounded in entries (oldest out first).
 */
export class GrantCache {
  private readonly entries = new Map<string, Entry>();
  /** The latest version a check answered with, per grant: what a new read is tagged with. */
  private readonly seen = new Map<string, string>();

  constructor(
    private readonly maxAgeMs = 30_000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The grant, from the cache while it holds, else from `read` (one read at a time per grant; a failed read is not kept). */
  grant(grantId: string, read: () => Promise<Grant>): Promise<Grant> {
    const held = this.entries.get(grantId);
    if (held && this.now() - held.readAtMs < this.maxAgeMs) return held.grant;
    const entry: Entry = { grant: read(), readAtMs: this.now(), version: this.seen.get(grantId) };
    entry.grant.catch(() => {
      if (this.entries.get(grantId) === entry) this.entries.delete(grantId);
    });
    this.entries.delete(grantId);
    this.entries.set(grantId, entry);
    this.bound();
    return entry.grant;
  }

  /** A check on the grant answered under `version`: a listing read under another is dropped. */
  saw(grantId: string, version: string | undefined): void {
    if (version === undefined) return this.forget(grantId);
    this.seen.delete(grantId);
    this.seen.set(grantId, version);
    const held = this.entries.get(grantId);
    if (held && held.version !== version) this.entries.delete(grantId);
    this.bound();
  }

  /** A check on the grant was refused: whatever it was refused for may show in the listing too. */
  forget(grantId: string): void {
    this.entries.delete(grantId);
    this.seen.delete(grantId);
  }

  private bound(): void {
    for (const map of [this.entries, this.seen] as Map<string, unknown>[]) {
      while (map.size > this.maxEntries) map.delete(map.keys().next().value!);
    }
  }
}
