import { PolicyLoadError } from '../load-error';

/**
 * A bundle's place in time: `metadata.issued_at` of its `.manifest` (RFC 3339), which
 * scripts/build-policy.mjs writes and `.signatures.json` covers like every file. The revision
 * cannot order bundles (it is a content digest), so this claim is what tells a newer bundle from
 * an older one re-served in its place.
 */
export interface BundleClaim {
  revision: string;
  /** Milliseconds since the epoch; undefined when the bundle does not say. */
  issuedAt: number | undefined;
}

// Date.parse alone reads "March 7" or "2024" too; the build writes Date#toISOString().
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 time in milliseconds since the epoch, or undefined when it is not one. */
export function parseIssuedAt(value: unknown): number | undefined {
  if (typeof value !== 'string' || !RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The issued-at a bundle's manifest claims; a claim that is there but no RFC 3339 time is refused. */
export function issuedAtOf(files: ReadonlyMap<string, Buffer>): number | undefined {
  const manifest = files.get('.manifest');
  if (!manifest) return undefined;
  const claimed = (JSON.parse(manifest.toString('utf8')) as { metadata?: { issued_at?: unknown } }).metadata?.issued_at;
  if (claimed === undefined) return undefined;
  const issuedAt = parseIssuedAt(claimed);
  if (issuedAt === undefined) throw new PolicyLoadError('invalid_bundle', '.manifest metadata.issued_at is not an RFC 3339 time');
  return issuedAt;
}

const shown = (ms: number | undefined) => (ms === undefined ? 'no issued_at' : `issued ${new Date(ms).toISOString()}`);

/**
 * Refuses a signed bundle older than the one serving: a bundle server (or whoever can write to
 * it) re-serving an old, validly signed bundle would otherwise roll the policy back. The floor is
 * the bundle loaded last since the service started (nothing survives a restart), or
 * `minIssuedAt` (POLICY_BUNDLE_MIN_ISSUED_AT) before any. A bundle that does not say when it
 * was issued, once the serving one does, cannot be shown not to be older, and one issued at the
 * same instant under another revision is two policies claiming the same moment: both refused.
 * `allowRollback` (POLICY_BUNDLE_ALLOW_ROLLBACK) lets an operator go back on purpose.
 */
export class RollbackGuard {
  private serving: Partial<BundleClaim> | undefined;
  private offered: BundleClaim | undefined;

  constructor(
    private readonly allowRollback = false,
    minIssuedAt?: number,
  ) {
    if (minIssuedAt !== undefined) this.serving = { issuedAt: minIssuedAt };
  }

  /**
   * Throws when `candidate` must not replace what serves; otherwise holds it until the engine
   * settles it. An unverified bundle (development, no key) is held but never judged: its claim
   * is not signed, and it sets no floor.
   */
  admit(candidate: BundleClaim, verified: boolean): void {
    this.offered = verified ? candidate : { revision: candidate.revision, issuedAt: undefined };
    if (!verified || this.allowRollback) return;
    const floor = this.serving?.issuedAt;
    if (floor === undefined) return;
    const { revision, issuedAt } = candidate;
    const serving = this.serving?.revision ? `the serving ${this.serving.revision}` : 'POLICY_BUNDLE_MIN_ISSUED_AT';
    let why: string | undefined;
    if (issuedAt === undefined) why = `says no issued_at, so it cannot be shown newer than ${serving} (${shown(floor)})`;
    else if (issuedAt < floor) why = `(${shown(issuedAt)}) is older than ${serving} (${shown(floor)})`;
    // The same instant is the same bundle only under the same revision; POLICY_BUNDLE_MIN_ISSUED_AT
    // names no revision, and any bundle of that instant reaches it.
    else if (issuedAt === floor && this.serving?.revision !== undefined && revision !== this.serving.revision)
      why = `(${shown(issuedAt)}) claims the instant of ${serving}, under another revision`;
    if (why === undefined) return;
    this.offered = undefined;
    throw new PolicyLoadError(
      'rollback',
      `bundle ${revision} ${why}: refused as a rollback (POLICY_BUNDLE_ALLOW_ROLLBACK=true loads an older bundle on purpose)`,
      revision,
    );
  }

  /** The engine's verdict on the bundle last admitted: loaded, it is the new floor. */
  settled(loaded: boolean): void {
    if (loaded && this.offered) this.serving = this.offered;
    this.offered = undefined;
  }
}
