import { Client } from 'pg';
import { digestOf } from '../../src/kernel/digest';
import { decisionsWritten, startedServiceWith } from '../support/service';
import { brokerWorld, chainOf, checkAs } from '../support/broker-world';
import { callRecord } from '../support/call-records';

const { service, world } = startedServiceWith(brokerWorld);

async function digestOfCall(grantId: string, args: unknown): Promise<string> {
  const res = await checkAs(service, world, grantId, world.agent, { args });
  const record = await callRecord(service.deps.db, res.body.callId);
  return record.args_digest;
}

describe('tool arguments exist only as their digest', () => {
  it('digests RFC 8785 canonical JSON: stable under key reordering, different for different args', async () => {
    const { rootId } = await chainOf(service, world, 0);
    const one = await digestOfCall(rootId, { b: [1, { y: 2, x: 1 }], a: 'é', n: 1.5e3 });
    const reordered = await digestOfCall(rootId, { n: 1500, a: 'é', b: [1, { x: 1, y: 2 }] });
    const other = await digestOfCall(rootId, { b: [1, { y: 2, x: 1 }], a: 'e', n: 1500 });
    expect(one).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(reordered).toBe(one);
    expect(other).not.toBe(one);
    expect(one).toBe(digestOf({ a: 'é', b: [1, { x: 1, y: 2 }], n: 1500 }));
  });

  it('never writes an argument value to the logs or the database', async () => {
    const { leafId } = await chainOf(service, world, 1);
    const secret = `needle-${Date.now()}-do-not-store`;
    const allowed = await checkAs(service, world, leafId, world.agent, { args: { query: secret, nested: { key: secret } } });
    const denied = await checkAs(service, world, leafId, world.agent, { tool: 'issues.create_comment', args: { body: secret } });
    expect(allowed.body.decision).toBe('allow');
    expect(denied.body.decision).toBe('deny');
    await service.http
      .post(`/api/broker/calls/${allowed.body.callId}/outcome`)
      .set(world.broker.auth)
      .send({ outcome: 'failed', errorCode: 'upstream_timeout' })
      .expect(200);
    const calls = await service.http.get(`/api/grants/${leafId}/calls`).set(world.owner.auth);
    expect(JSON.stringify(calls.body)).not.toContain(secret);

    await decisionsWritten();
    expect(service.logs.join('\n')).not.toContain(secret);
    const tables = await service.deps.db('information_schema.tables').where('table_schema', 'public').pluck('table_name');
    for (const table of tables) {
      const { rows } = await service.deps.db.raw('select count(*)::int as n from ?? t where t::text like ?', [table, `%${secret}%`]);
      expect({ table, matches: rows[0].n }).toEqual({ table, matches: 0 });
    }
  });
});

describe('cost of a warm check', () => {
  it('reads nothing from Postgres and makes one Redis round trip', async () => {
    const { leafId } = await chainOf(service, world, 2);
    for (let i = 0; i < 2; i += 1) await checkAs(service, world, leafId, world.agent).expect(200);
    // Every statement the service's Postgres connections are sent, whether through knex's query
    // builder or straight to a pooled connection (the call trail's prepared insert).
    const pgQueries = jest.spyOn(Client.prototype, 'query');
    const redisCommands = jest.spyOn(service.deps.redis, 'sendCommand');
    let queries: string[];
    try {
      expect((await checkAs(service, world, leafId, world.agent)).body.decision).toBe('allow');
    } finally {
      // Read before the restore, which clears the recorded calls.
      queries = pgQueries.mock.calls.map(([query]) => (typeof query === 'string' ? query : (query as { text: string }).text));
      pgQueries.mockRestore();
    }
    // The invalidation relay polls its outbox and the tally writer adds its counts on timers of
    // their own; those queries are not the check's.
    const checkQueries = queries.filter((sql) => !/"cache_invalidations"|insert into call_tallies/.test(sql));
    expect(checkQueries).toHaveLength(1);
    // The record and its leaf of the trail's tree in one statement.
    expect(checkQueries[0]).toMatch(/^with tree as \(select trail_append\(.*\) insert into "?call_records"? /s);
    expect(redisCommands.mock.calls.map(([command]) => (command as { name: string }).name)).toEqual(['evalsha']);
    redisCommands.mockRestore();
  });
});
