import type { BudgetAnswer } from '../../src/budget/sliding-window';
import type { BrokerTokenReads, Chain, CheckReads, CheckingBroker, TreeReads } from '../../src/broker/reads';
import { NO_PRINCIPAL_FACTS } from '../../src/broker/tree-facts';
import { cachedBrokerTokens, cachedCheckReads, type CheckBudget } from '../../src/speedups/caches';

/**
 * The broker check's caches (src/speedups/caches.ts) over a plain read interface that counts what
 * it is asked: what they keep, under which version and for how long, and what they never keep.
 */
const agent = { kind: 'agent' as const, id: 'agt_1' };
const broker: CheckingBroker = { kind: 'broker', brokerId: 'brk_1', tokenHash: 'h1', remembered: true };
const link = (id: string, pod: string): Chain[number] => ({
  id,
  parent_id: null,
  root_id: 'grt_root',
  broker_id: 'brk_1',
  connection_id: 'con_1',
  target: { kind: 'pod', id: pod, pod_id: pod },
  audience_mode: 'members',
  audience: [],
  tools: ['t'],
  write_mode: 'read',
  budget: { calls: 1, window_ms: 1 },
  expires_at_ms: 1,
});
const chain: Chain = [link('grt_root', 'pod_1')];
const quiet = { stamp: 's', labels: {}, calls: {} };

function plainReads(state: { version: string; memberOf: string[]; subjectExpiresAtMs: number | null }) {
  const asked: string[] = [];
  const tree = (version: string, session = quiet): TreeReads => ({
    version,
    session,
    confirmBroker: async () => void asked.push(`broker@${version}`),
    subjectOf: async () => (asked.push(`subject@${version}`), { principal: agent, expiresAtMs: state.subjectExpiresAtMs }),
    factsOf: async () => (asked.push(`facts@${version}`), { ...NO_PRINCIPAL_FACTS, memberOf: state.memberOf }),
  });
  const reads: CheckReads = {
    chainOf: async (grantId) => (asked.push(`chain ${grantId}`), grantId === 'grt_root' ? chain : null),
    approvalOf: async (id) => (asked.push(`approval ${id}`), { id, found: false }),
    confirmBroker: async () => void asked.push('broker'),
    treeAt: async (_rootId, _now, known) => (known ? tree(known.version, known.session) : (asked.push('version'), tree(state.version))),
    credentialSourceOf: async (connectionId) => (asked.push(`source ${connectionId}`), null),
  };
  const budget: CheckBudget = {
    run: async () =>
      ({ kind: 'probed', remaining: 1, resetMs: 1, session: { stamp: 'after', labels: {}, calls: { t: 1 } } }) as BudgetAnswer,
    refund: async () => undefined,
    treeState: async () => null,
  };
  return { asked, reads, budget };
}

async function check(reads: CheckReads, nowMs: number) {
  const tree = await reads.treeAt('grt_root', nowMs);
  await tree.confirmBroker(broker);
  const subject = await tree.subjectOf('art_x', nowMs);
  return { tree, facts: await tree.factsOf(chain, subject!.principal) };
}

describe('the check caches', () => {
  it('read a tree’s version, broker, subject and facts once, then nothing until the version moves or the age runs out', async () => {
    const state = { version: 'v1', memberOf: ['pod_1'], subjectExpiresAtMs: null };
    const plain = plainReads(state);
    const { reads } = cachedCheckReads(plain.reads, plain.budget, { factMaxAgeMs: 1000 });
    const first = await check(reads, 0);
    const second = await check(reads, 500);
    expect(second.facts).toBe(first.facts);
    expect(plain.asked).toEqual(['version', 'broker@v1', 'subject@v1', 'facts@v1']);

    // The budget script reported another version: everything is read again under it.
    plain.asked.length = 0;
    await reads.treeAt('grt_root', 600, { version: 'v2', session: quiet });
    await check(reads, 700);
    expect(plain.asked).toEqual(['broker@v2', 'subject@v2', 'facts@v2']);

    // Past the age, the version is read again even if nothing said it moved.
    plain.asked.length = 0;
    await check(reads, 2000);
    expect(plain.asked).toEqual(['version', 'broker@v1', 'subject@v1', 'facts@v1']);
  });

  it('never keep a subject past its token’s expiry, nor the facts of a principal outside a pod of the chain', async () => {
    const plain = plainReads({ version: 'v1', memberOf: [], subjectExpiresAtMs: 100 });
    const { reads } = cachedCheckReads(plain.reads, plain.budget, { factMaxAgeMs: 10_000 });
    await check(reads, 50);
    await check(reads, 60);
    await check(reads, 150);
    expect(plain.asked.filter((read) => read.startsWith('subject'))).toEqual(['subject@v1', 'subject@v1']);
    expect(plain.asked.filter((read) => read.startsWith('facts'))).toEqual(['facts@v1', 'facts@v1', 'facts@v1']);
  });

  it('take the tree’s session from every budget answer, so the next check decides on it', async () => {
    const plain = plainReads({ version: 'v1', memberOf: ['pod_1'], subjectExpiresAtMs: null });
    const { reads, budget } = cachedCheckReads(plain.reads, plain.budget, { factMaxAgeMs: 10_000 });
    expect((await reads.treeAt('grt_root', 0)).session).toEqual(quiet);
    await budget.run({ rootId: 'grt_root', levels: [], expectedVersion: 'v1', mode: 'probe' });
    expect((await reads.treeAt('grt_root', 1)).session).toEqual({ stamp: 'after', labels: {}, calls: { t: 1 } });
  });

  it('keep chains and credential sources, which never change, but not an unknown grant or an approval', async () => {
    const plain = plainReads({ version: 'v1', memberOf: [], subjectExpiresAtMs: null });
    const { reads } = cachedCheckReads(plain.reads, plain.budget, { factMaxAgeMs: 10_000 });
    for (let i = 0; i < 2; i += 1) {
      await reads.chainOf('grt_root');
      await reads.chainOf('grt_unknown');
      await reads.credentialSourceOf('con_1', 't');
      await reads.approvalOf('apr_1');
    }
    expect(plain.asked).toEqual([
      'chain grt_root',
      'chain grt_unknown',
      'source con_1',
      'approval apr_1',
      'chain grt_unknown',
      'approval apr_1',
    ]);
  });
});

describe('the broker token memory', () => {
  it('answers from memory as remembered, for at most its age, and forgets a token Postgres no longer knows', async () => {
    const live = new Set(['h1']);
    const asked: string[] = [];
    const plain: BrokerTokenReads = {
      byHash: async () => {
        throw new Error('the memory confirms, it does not ask the plain look-up');
      },
      confirm: async (hash) => (asked.push(hash), live.has(hash) ? 'brk_1' : null),
    };
    const tokens = cachedBrokerTokens(plain, 100);
    expect(await tokens.byHash('h1', 0)).toEqual({ brokerId: 'brk_1', remembered: false });
    expect(await tokens.byHash('h1', 50)).toEqual({ brokerId: 'brk_1', remembered: true });
    expect(await tokens.byHash('h1', 200)).toEqual({ brokerId: 'brk_1', remembered: false });
    live.delete('h1');
    expect(await tokens.confirm('h1', 210)).toBeNull();
    expect(await tokens.byHash('h1', 220)).toBeNull();
    expect(asked).toEqual(['h1', 'h1', 'h1', 'h1']);
  });
});
