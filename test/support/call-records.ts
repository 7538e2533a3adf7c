import type { Database } from '../../src/db/database';
import { callRecordsAfter, findCallRecord, type CallRecordRow } from '../../src/trail/repositories/call-records';

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
