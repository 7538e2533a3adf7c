import { ApiError } from './errors';
import { looksLikeId, type IdKind } from './ids';

/** A position in a newest-first list: the sort key (time, id) of the last item of the previous page. */
export interface ListPosition {
  at: Date;
  id: string;
}

const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** The service's ids: a prefix and a TypeID suffix, letters, digits and `_` at most. */
const ID = /^[A-Za-z0-9_]{1,128}$/;

/** An opaque cursor: the sort key (time, id) of the last item of the page, base64url JSON. */
export function encodeCursor(at: Date, id: string): string {
  return Buffer.from(JSON.stringify([at.toISOString(), id])).toString('base64url');
}

/**
 * The position a cursor of `encodeCursor` names; anything else is a 400 naming `query.cursor`.
 * With `kind`, its id must be an id of that kind (a call trail's cursor names a call).
 */
export function decodeCursor(cursor: string | undefined, kind?: IdKind): ListPosition | null {
  if (cursor === undefined) return null;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    // Exactly what encodeCursor writes: the decoded text reaches SQL, where a NUL in the id or a
    // year Postgres cannot hold would be a 500, not the 400 a forged cursor is.
    if (typeof at === 'string' && ISO_MILLIS.test(at) && typeof id === 'string' && ID.test(id) && (!kind || looksLikeId(kind, id))) {
      const date = new Date(at);
      if (!Number.isNaN(date.getTime())) return { at: date, id };
    }
  } catch {
    // falls through to the refusal below
  }
  throw new ApiError('invalid_request', 'the cursor is not one this service issued', {
    errors: [{ path: 'query.cursor', message: 'unknown cursor' }],
  });
}
