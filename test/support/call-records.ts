import type { Database } from '../../src/db/database';
import type { TestService } from './service';
import { callRecordsAfter } from '../../src/trail/repositories/call-record-listings';
import { findCallRecord, type CallRecordRow } from '../../src/trail/repositories/call-records';

/**
 * The call trail as tests read it: through its repository, which turns the stored binary form
 * (UUIDs, digest bytes, small codes) back into typeids and `sha256:` hex.
 */
export async function callRecord(db: Database, callId: string): Promise<CallRecordRow> {
  const record = await findCallRecord(db, callId);
  if (!record) throw new Error(`no call record ${callId}`);
  return record;
}

/** Every record of a grant, newest first (held ones included). */
export function callRecordsOf(db: Database, grantId: string): Promise<CallRecordRow[]> {
  return callRecordsAfter(db, grantId, null, 100_000);
}

export { uuidOf } from '../../src/trail/repositories/codec';

/** Every record of a grant as the API lists it to `auth`, page after page, newest first. */
export async function listedCallsOf<T = Record<string, unknown>>(
  service: { http: TestService['http'] },
  auth: Record<string, string>,
  grantId: string,
): Promise<T[]> {
  const records: T[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: { items: T[]; nextCursor: string | null } } = await service.http
      .get(`/api/grants/${grantId}/calls?limit=200${cursor ? `&cursor=${cursor}` : ''}`)
      .set(auth)
      .expect(200);
    records.push(...page.body.items);
    cursor = page.body.nextCursor;
  } while (cursor);
  return records;
}
