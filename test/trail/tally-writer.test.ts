import { Writable } from 'node:stream';
import { createDatabase, type Database } from '../../src/db/database';
import { TallyWriter, type TalliedCheck } from '../../src/trail/tally-writer';
import { createLogger } from '../../src/kernel/log';

/**
 * The trail's tallies as replicas write them: counts summed in memory and added in one statement,
 * two writers adding to the same rows at once without a deadlock or a lost count; with Postgres
 * away nothing throws, and what waits stays within its bound (the rest dropped and said).
 */
let db: Database;
const lines: string[] = [];
const log = createLogger(
  'warn',
  new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  }),
);
const pod = `pod_tally_${process.pid}_${Date.now().toString(36)}`;
const at = Date.parse('2026-11-20T10:15:00Z');

const check = (fields: Partial<TalliedCheck> = {}): TalliedCheck => ({
  podId: pod,
  rootId: 'grt_root',
  atMs: at,
  decision: 'allowed',
  reason: '',
  orgRule: '',
  ...fields,
});

beforeAll(() => {
  db = createDatabase(process.env.DATABASE_URL!, 4);
});
afterAll(async () => {
  await db('call_tallies').where('pod_id', pod).delete();
  await db('call_tree_tallies').where('pod_id', pod).delete();
  await db.destroy();
});

it('sums in memory and adds to the same rows from two writers at once, exactly', async () => {
  const writers = [new TallyWriter({ db, log, flushMs: 60_000 }), new TallyWriter({ db, log, flushMs: 60_000 })];
  for (let round = 0; round < 20; round += 1) {
    for (const writer of writers) {
      for (let i = 0; i < 50; i += 1) writer.count(check({ rootId: `grt_${i % 5}` }));
      writer.count(check({ decision: 'denied', reason: 'tool_not_allowed' }));
      writer.count(check({ decision: 'denied', reason: 'repository_not_allowlisted', orgRule: 'org.allowlist', atMs: at + 3_600_000 }));
    }
    await Promise.all(writers.map((writer) => writer.flush()));
  }
  await Promise.all(writers.map((writer) => writer.close()));
  const hours = await db('call_tallies')
    .where('pod_id', pod)
    .orderBy(['hour', 'decision', 'reason'])
    .select('hour', 'decision', 'reason', 'org_rule', 'calls');
  expect(hours.map((row) => ({ ...row, calls: Number(row.calls) }))).toEqual([
    { hour: new Date('2026-11-20T10:00:00Z'), decision: 'allowed', reason: '', org_rule: '', calls: 2000 },
    { hour: new Date('2026-11-20T10:00:00Z'), decision: 'denied', reason: 'tool_not_allowed', org_rule: '', calls: 40 },
    {
      hour: new Date('2026-11-20T11:00:00Z'),
      decision: 'denied',
      reason: 'repository_not_allowlisted',
      org_rule: 'org.allowlist',
      calls: 40,
    },
  ]);
  const trees = await db('call_tree_tallies').where('pod_id', pod).orderBy('root_id').select('root_id', 'calls');
  expect(trees.map((row) => [row.root_id, Number(row.calls)])).toEqual(
    ['grt_0', 'grt_1', 'grt_2', 'grt_3', 'grt_4'].map((root) => [root, 400]),
  );
});

it('with Postgres away keeps what it counted within its bound, and never throws', async () => {
  const away = createDatabase('postgres://postgres@127.0.0.1:1/nowhere', 1);
  try {
    const writer = new TallyWriter({ db: away, log, flushMs: 60_000, maxRows: 3 });
    for (let i = 0; i < 10; i += 1) writer.count(check({ rootId: `grt_${i}`, decision: 'denied', reason: `reason_${i}` }));
    await expect(writer.flush()).resolves.toBeUndefined();
    await expect(writer.close()).resolves.toBeUndefined();
    expect(lines.some((line) => line.includes('call tallies not written; retrying'))).toBe(true);
    expect(lines.some((line) => line.includes('call tallies dropped'))).toBe(true);
  } finally {
    await away.destroy();
  }
});
