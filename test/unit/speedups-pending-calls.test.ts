import { GroupCommit } from '../../src/speedups/group-commit';
import { pendingCalls } from '../../src/speedups/pending-calls';
import { DependencyUnavailableError } from '../../src/kernel/dependency';
import { plainTrailWriter, type NewCallRecord, type TrailWriter, type WriteRecords } from '../../src/trail/writer';

/**
 * The pending-calls speed-up (src/speedups/pending-calls.ts) around the trail's statement: it
 * remembers a record only once the statement that wrote it resolved, only a pending one, and by
 * the time the check's own write resolves, through the group commit and the plain writer alike.
 */
const row = (id: string, outcome: NewCallRecord['outcome'] = 'pending', tool = 'repos.read_file'): NewCallRecord => ({
  id,
  grant_id: `grant-of-${id}`,
  root_id: 'root',
  tool,
  principal_kind: 'agent',
  principal_id: 'agent',
  outcome,
  reason: outcome === 'pending' ? 'allowed' : 'tool_not_allowed',
  args_digest: `sha256:${'0'.repeat(64)}`,
  requested_at: new Date(),
});

const writers: Array<[string, (insert: WriteRecords) => TrailWriter]> = [
  ['the group commit', (insert) => new GroupCommit(insert)],
  ['the plain writer', plainTrailWriter],
];

describe.each(writers)('through %s', (_name, writerOf) => {
  it('remembers the pending records of a written statement, not the denied ones, before each write resolves', async () => {
    const remembered = pendingCalls();
    const statements: string[][] = [];
    const writer = writerOf(
      remembered.insert(async (rows) => {
        statements.push(rows.map((r) => r.id));
        // Not remembered while the statement is in flight: only what it made durable is.
        expect(rows.map((r) => remembered.recall(r.id))).toEqual(rows.map(() => undefined));
        return rows.map((_r, i) => i);
      }),
    );
    const rows = [row('a'), row('b', 'denied'), row('c')];
    const recalledWhenWritten = await Promise.all(rows.map((r) => writer.write(r).then(() => remembered.recall(r.id))));
    expect(recalledWhenWritten).toEqual([
      { grantId: 'grant-of-a', requestedAt: rows[0]!.requested_at },
      undefined,
      { grantId: 'grant-of-c', requestedAt: rows[2]!.requested_at },
    ]);
    expect(statements.flat()).toEqual(['a', 'b', 'c']);
    remembered.forget('a');
    expect(remembered.recall('a')).toBeUndefined();
  });

  it('remembers nothing of a statement that failed', async () => {
    const remembered = pendingCalls();
    const writer = writerOf(remembered.insert(() => Promise.reject(new DependencyUnavailableError('Postgres is away'))));
    const settled = await Promise.allSettled([writer.write(row('a')), writer.write(row('b'))]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect([remembered.recall('a'), remembered.recall('b')]).toEqual([undefined, undefined]);
  });
});

it("remembers the good records of a batch the group commit retries alone after one row's refusal, not the refused one", async () => {
  const remembered = pendingCalls();
  const statements: number[] = [];
  const writer = new GroupCommit(
    remembered.insert(async (rows) => {
      statements.push(rows.length);
      if (rows.some((r) => r.tool.includes('\u0000'))) throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
      return rows.map((_r, i) => i);
    }),
  );
  const rows = [row('a'), row('bad', 'pending', 'bad\u0000tool'), row('c')];
  const settled = await Promise.allSettled(rows.map((r) => writer.write(r)));
  expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  // One statement for the batch, refused, then one per row.
  expect(statements).toEqual([3, 1, 1, 1]);
  expect(rows.map((r) => remembered.recall(r.id)?.grantId)).toEqual(['grant-of-a', undefined, 'grant-of-c']);
});
