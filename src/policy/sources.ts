import { createHash } from 'node:crypto';
import { open, readFile, stat } from 'node:fs/promises';
import { boundedBody, boundedFile, DEFAULT_MAX_BUNDLE_BYTES, maxUnpackedBytes } from './bundles/limits';
import { issuedAtOf, RollbackGuard } from './bundles/order';
import { artifactOf, claimedRevision, untar, type PolicyArtifact } from './bundles/read';
import { hasKeys, verifyBundle, type BundleKeys } from './bundles/verify';
import { PolicyLoadError } from './load-error';
import { policyBundleRefusals } from './metrics';

/**
 * Where the engine's policy comes from: a compiled module on disk (development), an OPA bundle
 * on disk, or an OPA bundle server polled with ETag. A source throws when what it
 * found must not be loaded; the engine then keeps the policy it has.
 */
export interface PolicySource {
  readonly location: string;
  /** The artifact, or undefined when nothing changed since the last successful fetch. */
  fetch(): Promise<PolicyArtifact | undefined>;
  /** Cheap: is a fetch worth it now? */
  changed(): Promise<boolean>;
  /** How long until the next look (HTTP backs off after failures). */
  nextPollMs(): number;
  /** The engine's verdict on the artifact fetch() returned: loaded, or refused. */
  settled?(loaded: boolean): void;
}

export interface SignaturePolicy {
  keys: BundleKeys;
  /** Production: an unsigned bundle is refused even when no key would be needed to read it. */
  required: boolean;
}

/** What a bundle source holds a bundle to beyond its signature: its size, and its age. */
export interface BundleLimits {
  /** POLICY_BUNDLE_MAX_BYTES: the bundle as fetched or read; it may unpack to a multiple (bundles/limits.ts). */
  maxBytes?: number;
  /** POLICY_BUNDLE_ALLOW_ROLLBACK: load a signed bundle older than the serving one. */
  allowRollback?: boolean;
  /** POLICY_BUNDLE_MIN_ISSUED_AT (ms since the epoch): the floor before any bundle has loaded. */
  minIssuedAt?: number;
}

/** Inode, size and mtime: an atomic rename always brings a new inode, even within one mtime tick. */
async function fileSignature(file: string): Promise<string> {
  const info = await stat(file);
  return `${info.ino}:${info.size}:${info.mtimeMs}`;
}

abstract class FileSource implements PolicySource {
  private lastRead = '';

  constructor(
    readonly location: string,
    private readonly pollMs: number,
  ) {}

  async changed(): Promise<boolean> {
    return (await fileSignature(this.location).catch(() => this.lastRead)) !== this.lastRead;
  }

  nextPollMs(): number {
    return this.pollMs;
  }

  async fetch(): Promise<PolicyArtifact | undefined> {
    try {
      this.lastRead = await fileSignature(this.location);
      return await this.artifact(await this.read());
    } catch (error) {
      throw counted(error);
    }
  }

  protected read(): Promise<Buffer> {
    return readFile(this.location);
  }

  protected abstract artifact(bytes: Buffer): Promise<PolicyArtifact>;
}

/**
 * A bare `.wasm` module (what `npm run build:policy` writes for development). Unsigned: production
 * refuses it at start (src/config.ts); with `requireTrustedFile` it is at least judged by who may
 * write it (root or this process's user, no one else), a second net for a hand-made Config.
 */
export class WasmFileSource extends FileSource {
  constructor(
    location: string,
    private readonly requireTrustedFile: boolean,
    pollMs = 1000,
  ) {
    super(location, pollMs);
  }

  protected override async read(): Promise<Buffer> {
    if (this.requireTrustedFile) await assertTrustedFile(this.location);
    return super.read();
  }

  protected artifact(wasm: Buffer): Promise<PolicyArtifact> {
    const digest = `sha256:${createHash('sha256').update(wasm).digest('hex')}`;
    return Promise.resolve({ wasm, digest, revision: digest });
  }
}

export class BundleFileSource extends FileSource {
  private readonly maxBytes: number;
  private readonly order: RollbackGuard;

  constructor(
    location: string,
    private readonly signatures: SignaturePolicy,
    options: BundleLimits & { pollMs?: number } = {},
  ) {
    super(location, options.pollMs ?? 1000);
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
    this.order = new RollbackGuard(options.allowRollback, options.minIssuedAt);
  }

  protected override async read(): Promise<Buffer> {
    const file = await open(this.location);
    try {
      return await boundedFile(file, this.maxBytes);
    } finally {
      await file.close();
    }
  }

  protected artifact(bundle: Buffer): Promise<PolicyArtifact> {
    return openBundle(bundle, this.signatures, this.order, this.maxBytes);
  }

  settled(loaded: boolean): void {
    this.order.settled(loaded);
  }
}

/** OPA's bundle plugin, as far as one bundle goes: GET with If-None-Match, 304 is "unchanged". */
export class BundleHttpSource implements PolicySource {
  private etag: string | undefined;
  private fetchedEtag: string | undefined;
  private failures = 0;
  private readonly maxBytes: number;
  private readonly order: RollbackGuard;

  readonly location: string;

  constructor(
    private readonly url: string,
    private readonly signatures: SignaturePolicy,
    private readonly options: BundleLimits & { pollMs: number; timeoutMs: number; token?: string },
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BUNDLE_BYTES;
    this.order = new RollbackGuard(options.allowRollback, options.minIssuedAt);
    // Shown in /readyz and logs: never the credentials or query a URL may carry.
    const shown = new URL(url);
    shown.username = '';
    shown.password = '';
    shown.search = '';
    this.location = shown.toString();
  }

  changed(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** The poll interval, doubled per consecutive failure up to 5 minutes, with jitter. */
  nextPollMs(): number {
    const base = Math.min(this.options.pollMs * 2 ** Math.min(this.failures, 12), Math.max(this.options.pollMs, 300_000));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  async fetch(): Promise<PolicyArtifact | undefined> {
    try {
      const response = await fetch(this.url, {
        headers: {
          accept: 'application/gzip, application/octet-stream',
          ...(this.etag ? { 'if-none-match': this.etag } : {}),
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        },
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      if (response.status === 304) {
        this.failures = 0;
        return undefined;
      }
      if (!response.ok) throw new PolicyLoadError('http_error', `the bundle server answered ${response.status}`);
      const body = await boundedBody(response, this.maxBytes);
      const artifact = await openBundle(body, this.signatures, this.order, this.maxBytes);
      this.fetchedEtag = response.headers.get('etag') ?? undefined;
      return artifact;
    } catch (error) {
      this.failures += 1;
      throw counted(error);
    }
  }

  /**
   * Only a bundle the engine loaded moves the ETag on: a refused one (its module broken, say) is
   * fetched and refused again, so a 304 never passes for "what the server publishes is serving".
   */
  settled(loaded: boolean): void {
    this.order.settled(loaded);
    if (loaded) {
      this.etag = this.fetchedEtag;
      this.failures = 0;
    } else {
      this.failures += 1;
    }
  }
}

/** A bundle refused for its size or its age is counted by reason, beside every refused load. */
function counted(error: unknown): unknown {
  if (error instanceof PolicyLoadError && (error.kind === 'rollback' || error.kind === 'too_large'))
    policyBundleRefusals.labels(error.kind).inc();
  return error;
}

async function openBundle(bundle: Buffer, signatures: SignaturePolicy, order: RollbackGuard, maxBytes: number): Promise<PolicyArtifact> {
  let files: Map<string, Buffer>;
  try {
    files = await untar(bundle, maxUnpackedBytes(maxBytes));
  } catch (error) {
    if (error instanceof PolicyLoadError) throw error;
    throw new PolicyLoadError('invalid_bundle', `not an OPA bundle (.tar.gz): ${(error as Error).message}`);
  }
  const claimed = claimedRevision(files);
  try {
    const verified = hasKeys(signatures.keys);
    if (verified) verifyBundle(files, signatures.keys);
    else if (signatures.required)
      throw new PolicyLoadError(
        'no_verification_key',
        'no bundle verification key is configured (POLICY_BUNDLE_PUBLIC_KEY or POLICY_BUNDLE_SECRET)',
      );
    const artifact = artifactOf(files);
    // Only once verified: the issued-at is then signed, and a refusal names a revision its signer gave.
    order.admit({ revision: artifact.revision, issuedAt: verified ? issuedAtOf(files) : undefined }, verified);
    return { ...artifact, signed: verified };
  } catch (error) {
    // The revision the refused bundle claims goes with the error, to /metrics and the logs.
    const kind = error instanceof PolicyLoadError ? error.kind : 'invalid_bundle';
    throw new PolicyLoadError(kind, (error as Error).message, claimed);
  }
}

async function assertTrustedFile(file: string): Promise<void> {
  const info = await stat(file);
  const ownUid = process.getuid?.();
  if (info.uid !== 0 && info.uid !== ownUid)
    throw new PolicyLoadError('untrusted_file', `module file is owned by uid ${info.uid}, neither root nor this process (${ownUid})`);
  if ((info.mode & 0o022) !== 0)
    throw new PolicyLoadError(
      'untrusted_file',
      `module file is writable by its group or by others (mode ${(info.mode & 0o777).toString(8)})`,
    );
}
