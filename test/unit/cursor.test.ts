import { decodeCursor, encodeCursor } from '../../src/kernel/cursor';
import { ApiError } from '../../src/kernel/errors';

describe('list cursors', () => {
  it('round-trips the sort key of the last item', () => {
    const at = new Date('2026-11-22T10:00:00.123Z');
    expect(decodeCursor(encodeCursor(at, 'grt_x'))).toEqual({ at, id: 'grt_x' });
    expect(decodeCursor(undefined)).toBeNull();
  });

  it.each([
    '',
    'not-base64!',
    Buffer.from('[1,2]').toString('base64url'),
    Buffer.from('["not a date","x"]').toString('base64url'),
    Buffer.from('{}').toString('base64url'),
    // Well-formed JSON whose text would reach SQL: a NUL, a lone surrogate, a year Postgres cannot hold.
    Buffer.from('["2026-11-22T10:00:00.123Z","grt_\\u0000"]').toString('base64url'),
    Buffer.from('["2026-11-22T10:00:00.123Z","grt_\\ud800"]').toString('base64url'),
    Buffer.from('["-271821-04-20T00:00:00.000Z","grt_x"]').toString('base64url'),
    Buffer.from('["2026-11-22","grt_x"]').toString('base64url'),
  ])('refuses a cursor it did not issue (%s) with a 400', (cursor) => {
    expect(() => decodeCursor(cursor)).toThrow(ApiError);
    try {
      decodeCursor(cursor);
    } catch (error) {
      expect((error as ApiError).status).toBe(400);
    }
  });
});
