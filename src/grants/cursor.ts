import { ApiError } from '../kernel/errors';
import { looksLikeId, type IdKind } from '../kernel/ids';
import type { ListPosition } from './repository';

/** An opaque cursor: the sort key (time, id) of the last item of the page, base64url JSON. */
export function encodeCursor(at: Date, id: string): string {
  return Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
}

/** The position a cursor names; with `kind`, its id must be an id of that kind (else the 400). */
export function decodeCursor(cursor: string | undefined, kind?: IdKind): ListPosition | null {
  if (cursor === undefined) return null;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = typeof at === 'string' ? new Date(at) : new Date(Number.NaN);
    if (typeof id === 'string' && !Number.isNaN(date.getTime()) && (!kind || looksLikeId(kind, id))) return { at: date, id };
  } catch {
    // falls through to the refusal below
  }
  throw new ApiError('invalid_request', 'the cursor is not one this service issued', {
    errors: [{ path: 'query.cursor', message: 'unknown cursor' }],
  });
}
