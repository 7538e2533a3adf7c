import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract } from 'tar-stream';
import { PolicyLoadError } from '../load-error';

/** What the engine loads: the module, its revision, and the bundle's data (if any). */
export interface PolicyArtifact {
  wasm: Buffer;
  /** The manifest's revision, or the module's sha256 when the bundle names none. */
  revision: string;
  /** sha256 of the module: two artifacts with the same digest are the same policy. */
  digest: string;
  data?: Record<string, unknown>;
}

const MAX_BUNDLE_BYTES = 64 * 1024 * 1024;

/** An OPA bundle (`.tar.gz`) as a map of its files, by name without the leading `/`. */
export async function untar(bundle: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const reader = extract();
  let total = 0;
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (data: unknown) => {
      const chunk = data as Buffer;
      total += chunk.length;
      if (total > MAX_BUNDLE_BYTES)
        reader.destroy(new PolicyLoadError('too_large', `the bundle unpacks to more than ${MAX_BUNDLE_BYTES} bytes`));
      chunks.push(chunk);
    });
    stream.on('end', () => {
      if (header.type === 'file') files.set(header.name.replace(/^(\.\/|\/)+/, ''), Buffer.concat(chunks));
      next();
    });
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    reader.on('finish', resolve);
    reader.on('error', reject);
    const gunzip = createGunzip();
    gunzip.on('error', reject);
    Readable.from([bundle]).pipe(gunzip).pipe(reader);
  });
  return files;
}

/** The module and revision of an unpacked bundle, as its `.manifest` names them. */
export function artifactOf(files: ReadonlyMap<string, Buffer>): PolicyArtifact {
  const manifest = files.has('.manifest') ? (JSON.parse(files.get('.manifest')!.toString('utf8')) as Manifest) : {};
  const modules = [...new Set((manifest.wasm ?? []).map((entry) => entry.module.replace(/^\/+/, '')))];
  if (modules.length > 1) throw new PolicyLoadError('invalid_bundle', `the bundle holds ${modules.length} WASM modules; one is expected`);
  const wasm = files.get(modules[0] ?? 'policy.wasm');
  if (!wasm) throw new PolicyLoadError('incomplete', `the bundle holds no ${modules[0] ?? 'policy.wasm'}`);
  const digest = `sha256:${createHash('sha256').update(wasm).digest('hex')}`;
  const data = files.has('data.json') ? (JSON.parse(files.get('data.json')!.toString('utf8')) as Record<string, unknown>) : undefined;
  return { wasm, digest, revision: manifest.revision || digest, ...(data && Object.keys(data).length > 0 ? { data } : {}) };
}

/** The revision a bundle's manifest claims, read before (and whatever) its signature says: for logs and metrics only. */
export function claimedRevision(files: ReadonlyMap<string, Buffer>): string | undefined {
  try {
    const { revision } = JSON.parse(files.get('.manifest')?.toString('utf8') ?? '{}') as Manifest;
    return typeof revision === 'string' && revision !== '' ? revision : undefined;
  } catch {
    return undefined;
  }
}

interface Manifest {
  revision?: string;
  wasm?: Array<{ entrypoint: string; module: string }>;
}
