import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
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
  /** The bundle's signature was verified with a configured key (a bare module never is). */
  signed?: boolean;
}

/** What a bundle may unpack to unless told otherwise (the service passes its configured cap). */
export const DEFAULT_MAX_UNPACKED_BYTES = 64 * 1024 * 1024;

const gunzipBuffer = promisify(gunzip);

/**
 * An OPA bundle (`.tar.gz`) as a map of its files, by name without the leading `/`. Inflating
 * stops at `maxUnpackedBytes` of tar (headers and padding included): a few kilobytes of gzip can
 * stand for gigabytes, and zlib would inflate them all.
 */
export async function untar(bundle: Buffer, maxUnpackedBytes = DEFAULT_MAX_UNPACKED_BYTES): Promise<Map<string, Buffer>> {
  let tar: Buffer;
  try {
    tar = await gunzipBuffer(bundle, { maxOutputLength: maxUnpackedBytes });
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
      throw new PolicyLoadError('too_large', `the bundle unpacks to more than ${maxUnpackedBytes} bytes`);
    throw error;
  }
  const files = new Map<string, Buffer>();
  const reader = extract();
  reader.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
    stream.on('end', () => {
      if (header.type === 'file') files.set(header.name.replace(/^(\.\/|\/)+/, ''), Buffer.concat(chunks));
      next();
    });
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    reader.on('finish', resolve);
    reader.on('error', reject);
    reader.end(tar);
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
