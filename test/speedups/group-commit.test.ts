import { insertCallRecords } from '../../src/trail/repositories/call-record-inserts';
import { plainTrailWriter, type TrailWriter, type WriteRecords } from '../../src/trail/writer';
import { GroupCommit } from '../../src/speedups/group-commit';
import { newIdAt } from '../../src/kernel/ids';
import { startedServiceWith } from '../support/service';
import { brokerWorld, chainOf } from '../support/broker-world';
import { callRecordsOf } from '../support/call-records';

/**
 * The call trail's writers, the group commit (src/speedups/group-commit.ts) and the plain one
 * (trail/writer.ts): one tenant's bad row fails that check only, never its neighbours'.
 */
const { service, world: victim } = startedServiceWith(brokerWorld);

const writers: Array<[string, (insert: WriteRecords) => TrailWriter]> = [
  ['the group commit', (insert) => new GroupCommit(insert)],
  ['the plain writer', plainTrailWriter],
];

describe.each(writers)('%s', (_name, writerOf) => {
  it('writes the good rows of a batch that Postgres refuses for one bad row, and fails only that one', async () => {
    const { rootId } = await chainOf(service, victim, 0);
    const writer = writerOf((rows) => insertCallRecords(service.deps.db, rows));
    const row = (tool: string) => ({
      id: newIdAt('call', Date.now()),
      grant_id: rootId,
      root_id: rootId,
      tool,
      principal_kind: 'agent' as const,
      principal_id: victim.agent.agentId,
      outcome: 'pending' as const,
      reason: 'allowed',
      args_digest: `sha256:${'0'.repeat(64)}`,
      requested_at: new Date(),
    });
    // Queued together, so the group commit shares one INSERT; the NUL makes Postgres refuse that statement.
    const rows = [row('repos.read_file'), row('bad\u0000tool'), row('pulls.list'), row('repos.read_file')];
    const settled = await Promise.allSettled(rows.map((r) => writer.write(r)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    await writer.settle();
    const stored = (await callRecordsOf(service.deps.db, rootId)).map((r) => r.id);
    expect(stored.sort()).toEqual([rows[0]!.id, rows[2]!.id, rows[3]!.id].sort());
  });
});
