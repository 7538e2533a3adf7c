import type { FileHandle } from 'node:fs/promises';
import { PolicyLoadError } from '../load-error';

/**
 * How large a bundle may be: `maxBytes` as fetched or read (POLICY_BUNDLE_MAX_BYTES), and
 * UNPACKED_MULTIPLE times that once inflated, which is what bounds memory (64 MiB by default, the
 * bound before the download had one). Rego and JSON compress by a small factor, so a bundle at the
 * download cap still unpacks within it; a gzip bomb inflates by orders of magnitude, and does not.
 */
export const DEFAULT_MAX_BUNDLE_BYTES = 16 * 1024 * 1024;
export const UNPACKED_MULTIPLE = 4;

export const maxUnpackedBytes = (maxBytes: number) => maxBytes * UNPACKED_MULTIPLE;

const tooLarge = (what: string, maxBytes: number) =>
  new PolicyLoadError('too_large', `${what} is larger than ${maxBytes} bytes (POLICY_BUNDLE_MAX_BYTES)`);

/**
 * The body of a bundle server's answer, at most `maxBytes` of it: refused at once when its
 * Content-Length says more, else as soon as more has arrived, the connection dropped rather than
 * drained. Counted as fetch hands it over (decoded, should the server compress it once more):
 * what is counted is what is held in memory.
 */
export async function boundedBody(response: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge(`the bundle server's answer (Content-Length ${declared})`, maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let received = 0;
  // Leaving this loop by a throw cancels the stream, which aborts the request.
  for await (const chunk of response.body ?? []) {
    received += chunk.byteLength;
    if (received > maxBytes) throw tooLarge("the bundle server's answer", maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, received);
}

/** A bundle file, refused by its size before it is read. */
export async function boundedFile(file: FileHandle, maxBytes: number): Promise<Buffer> {
  const { size } = await file.stat();
  if (size > maxBytes) throw tooLarge(`the bundle file (${size} bytes)`, maxBytes);
  return file.readFile();
}
