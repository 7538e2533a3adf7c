import { withRoots, type CallRecordRow, type Queryable } from './call-record-rows';

/**
 * The records as people read them, with what became of the approvals they name: who decided each
 * (`approval_decided_by`, for a call an approval allowed and for the call it held), and, for a
 * call held for approval (stored `awaiting_approval`, which a record never stops being), how that
 * ended: `approved` (the call itself runs on the re-sent check, a record of its own), `denied`
 * with `approval_denied`, or `denied` with `approval_expired` when nobody decided in time (a
 * revoked grant's approvals expire with it). Only a pending, unexpired approval reads as awaiting.
 */
export async function withApprovals(db: Queryable, read: CallRecordRow[], now: Date): Promise<CallRecordRow[]> {
  const rows = await withRoots(db, read);
  const approvalIds = [...new Set(rows.flatMap((row) => (row.approval_id ? [row.approval_id] : [])))];
  if (approvalIds.length === 0) return rows.map((row) => ({ ...row, approval_decided_by: null }));
  const approvals: Array<{ id: string; decided_by: string | null; state: string; expires_at: Date }> = await db('approvals')
    .whereIn('id', approvalIds)
    .select('id', 'decided_by', 'state', 'expires_at');
  const byId = new Map(approvals.map((a) => [a.id, a]));
  return rows.map((row) => {
    const approval = row.approval_id ? byId.get(row.approval_id) : undefined;
    const read = { ...row, approval_decided_by: approval?.decided_by ?? null };
    if (row.outcome !== 'awaiting_approval' || !approval) return read;
    if (approval.state === 'approved' || approval.state === 'used') return { ...read, outcome: 'approved' as const };
    if (approval.state === 'denied') return { ...read, outcome: 'denied' as const, reason: 'approval_denied' };
    if (approval.expires_at.getTime() <= now.getTime()) return { ...read, outcome: 'denied' as const, reason: 'approval_expired' };
    return read;
  });
}
