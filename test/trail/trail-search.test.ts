import { insertCallRecords } from '../../src/trail/repositories/call-record-inserts';
import { callRecordsAfterPlan } from '../../src/trail/repositories/call-record-listings';
import type { NewCallRecord } from '../../src/trail/repositories/call-records';
import { newIdAt } from '../../src/kernel/ids';
import { expectProblem } from '../support/problems';
import { startService, type TestService } from '../support/service';
import { human } from '../support/world';
import { grantWorld, podTarget, postGrant, type GrantWorld } from '../support/grant-world';

/**
 * GET /api/grants/:grantId/calls with filters (the console's trail search): outcome, reason, tool,
 * principal, a time range and a credential's fingerprint, alone and together, paged by cursor with
 * the filter kept; the denied ones through their own index.
 */
let service: TestService;
let world: GrantWorld;
let grantId: string;
const HOUR = 3_600_000;
const start = Date.now() - 10 * HOUR;
const FINGERPRINT = Buffer.from('0123456789abcdef', 'hex');

function record(i: number, fields: Partial<NewCallRecord>): NewCallRecord {
  const at = new Date(start + i * 60_000);
  return {
    id: newIdAt('call', at.getTime()),
    grant_id: grantId,
    tool: 'repos.read_file',
    principal_kind: 'agent',
    principal_id: world.bot.agentId,
    outcome: 'succeeded',
    reason: 'allowed',
    args_digest: `sha256:${'0'.repeat(64)}`,
    requested_at: at,
    ...fields,
    root_id: grantId,
  };
}

const calls = (query: string, who = world.owner.auth) => service.http.get(`/api/grants/${grantId}/calls?${query}`).set(who);

beforeAll(async () => {
  service = await startService();
  world = await grantWorld(service);
  grantId = (await postGrant(service, world, { target: podTarget(world) }).expect(201)).body.id;
  const rows: NewCallRecord[] = [];
  for (let i = 0; i < 120; i += 1) {
    if (i % 10 === 0)
      rows.push(
        record(i, { outcome: 'denied', reason: i % 20 === 0 ? 'resource_not_allowed' : 'tool_not_allowed', tool: 'issues.create_comment' }),
      );
    else if (i % 7 === 0)
      rows.push(
        record(i, {
          outcome: 'awaiting_approval',
          reason: 'approval_required',
          tool: 'issues.create_comment',
          principal_kind: 'user',
          principal_id: world.owner.userId,
        }),
      );
    else rows.push(record(i, i % 3 === 0 ? { credential_fingerprint: FINGERPRINT, credential_expires_at: new Date(start + HOUR) } : {}));
  }
  await insertCallRecords(service.deps.db, rows);
});
afterAll(async () => {
  await service.close();
});

describe('the trail searched', () => {
  it('finds the denied calls of a tool for a reason, newest first', async () => {
    const res = await calls('outcome=denied&tool=issues.create_comment&reason=resource_not_allowed').expect(200);
    expect(res.body.items).toHaveLength(6);
    expect(
      res.body.items.every((c: { outcome: string; reason: string }) => c.outcome === 'denied' && c.reason === 'resource_not_allowed'),
    ).toBe(true);
    const times = res.body.items.map((c: { requestedAt: string }) => Date.parse(c.requestedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('filters by each field alone: outcome, reason (usual ones too), tool, principal, time range, credential', async () => {
    const count = async (query: string) => (await calls(`limit=200&${query}`).expect(200)).body.items.length as number;
    expect(await count('outcome=denied')).toBe(12);
    expect(await count('outcome=awaiting_approval')).toBe(await count('reason=approval_required'));
    expect(await count('reason=tool_not_allowed')).toBe(6);
    expect(await count('reason=allowed')).toBe(120 - 12 - (await count('outcome=awaiting_approval')));
    expect(await count('tool=repos.read_file')).toBe(await count('reason=allowed'));
    expect(await count(`principal=${world.owner.userId}`)).toBe(await count('outcome=awaiting_approval'));
    expect(await count(`principal=${world.bot.agentId}&tool=issues.create_comment`)).toBe(12);
    const from = new Date(start + 30 * 60_000).toISOString();
    const to = new Date(start + 40 * 60_000).toISOString();
    expect(await count(`from=${from}&to=${to}`)).toBe(10);
    expect(await count('credential=sha256:0123456789abcdef&outcome=succeeded')).toBe(await count('credential=sha256:0123456789abcdef'));
    expect(await count('credential=sha256:0123456789abcdef')).toBeGreaterThan(20);
    expect(await count('tool=no.such_tool')).toBe(0);
    expect(await count('outcome=failed')).toBe(0);
  });

  it('pages through a filter by cursor, every page filtered, nothing twice', async () => {
    const seen: string[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page += 1) {
      const res = await calls(`limit=5&outcome=denied${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`).expect(200);
      for (const item of res.body.items) {
        expect(item.outcome).toBe('denied');
        seen.push(item.id);
      }
      if (!res.body.nextCursor) break;
      cursor = res.body.nextCursor;
    }
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
  });

  it('keeps an index of the denied records in every day, which a denied search can walk', async () => {
    const { rows } = await service.deps.db.raw<{ rows: Array<{ days: string; indexed: string }> }>(
      `select count(*) as days, count(*) filter (where exists (
              select 1 from pg_indexes i where i.tablename = c.relname and i.indexdef like '%WHERE (outcome = 1)%')) as indexed
         from pg_inherits h join pg_class c on c.oid = h.inhrelid where h.inhparent = 'call_records'::regclass`,
    );
    expect(Number(rows[0]!.days)).toBeGreaterThan(1);
    expect(rows[0]!.indexed).toBe(rows[0]!.days);
    // With no other way to the rows than by index, the planner walks that one (at scale it picks it by cost: npm run bench:trail).
    await service.deps.db.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      await trx.raw('set local enable_bitmapscan = off');
      const plan = await callRecordsAfterPlan(trx, grantId, null, 51, { outcome: 'denied' });
      const partial = await trx.raw<{ rows: Array<{ indexname: string }> }>(
        "select indexname from pg_indexes where tablename like 'call_records_%' and indexdef like '%WHERE (outcome = 1)%'",
      );
      const walked = [...plan.matchAll(/Index Scan Backward using (\S+) on call_records_/g)].map((m) => m[1]!);
      expect(walked.length).toBeGreaterThan(0);
      expect(walked.every((index) => partial.rows.some((row) => row.indexname === index))).toBe(true);
    });
  });

  it('refuses a bad filter with a 400 problem, and an outsider learns nothing', async () => {
    for (const query of [
      'outcome=maybe',
      'reason=Not%20A%20Reason',
      'from=yesterday',
      'to=1e999',
      'tool=',
      'tool=a%00b',
      'credential=sha256:zz',
    ]) {
      expectProblem(await calls(query), 400, 'invalid_request');
    }
    expectProblem(await calls('outcome=denied', human(service, 'stranger').auth), 404, 'not_found');
  });
});
