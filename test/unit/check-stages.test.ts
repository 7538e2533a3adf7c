import type { BudgetAnswer, BudgetRequest } from '../../src/budget/sliding-window';
import type { CheckingBroker } from '../../src/broker/authenticator';
import type { Chain } from '../../src/broker/chain';
import { charge, type ChargeDeps } from '../../src/broker/check/charge';
import { decide, type DecideDeps } from '../../src/broker/check/decide';
import { resolve, type ResolveDeps } from '../../src/broker/check/resolve';
import { settle, type SettleDeps } from '../../src/broker/check/settle';
import type { TalliedCheck } from '../../src/grants/tally-writer';
import type { Resolved, Verdict } from '../../src/broker/check/stages';
import type { NewCallRecord } from '../../src/broker/call-trail';
import { NO_PRINCIPAL_FACTS, TreeSnapshot } from '../../src/broker/tree-facts';
import { ApiError } from '../../src/kernel/errors';
import { DependencyUnavailableError } from '../../src/kernel/dependency';

/**
 * The broker check's stages, each alone with fakes for what it is given (the whole check is held
 * to the same behaviour over HTTP in test/broker/). A fake that is never expected to be called
 * throws, so a stage that reaches further than its contract fails here.
 */
const broker: CheckingBroker = { kind: 'broker', brokerId: 'brk_1', tokenHash: 'hash-1', remembered: false };
const link = (id: string, parent: string | null): Chain[number] => ({
  id,
  parent_id: parent,
  root_id: 'grt_root',
  broker_id: 'brk_1',
  connection_id: 'con_1',
  target: { kind: 'pod', id: 'pod_1', pod_id: 'pod_1' },
  audience_mode: 'members',
  audience: [],
  tools: ['repos.read_file'],
  write_mode: 'read',
  budget: { calls: 10, window_ms: 60_000 },
  expires_at_ms: 10_000_000,
});
const chain: Chain = [link('grt_leaf', 'grt_root'), link('grt_root', null)];
const agent = { kind: 'agent' as const, id: 'agt_1' };
const request = { grantId: 'grt_leaf', tool: 'repos.read_file', args: { path: 'a' }, subjectToken: 'art_x' };
const unexpected = (what: string) => () => {
  throw new Error(`${what} was not expected`);
};

function resolved(overrides: Partial<Resolved> = {}): Resolved {
  return {
    broker,
    request,
    callId: 'call_1',
    argsDigest: 'sha256:00',
    requestedAt: new Date(1000),
    nowMs: 1000,
    chain,
    snapshot: new TreeSnapshot('v1', 1000),
    subject: { principal: agent, source: 'subject_token' },
    facts: NO_PRINCIPAL_FACTS,
    session: { stamp: 's1', labels: {}, calls: {} },
    ...overrides,
  };
}

describe('resolve (reads only)', () => {
  const deps = (over: Partial<ResolveDeps> = {}): ResolveDeps =>
    ({
      db: unexpected('the database'),
      clock: { now: () => 1000 },
      chains: { get: async () => chain },
      trees: { snapshotOf: unexpected('the tree cache'), renew: unexpected('the tree cache') },
      brokerTokens: { get: unexpected('token memory'), set: unexpected('token memory'), forget: unexpected('token memory') },
      resolveCredential: unexpected('the subject token'),
      ...over,
    }) as unknown as ResolveDeps;

  it('looks at nothing else for another broker’s grant and hands decide no subject', async () => {
    const foreign = await resolve(deps(), { ...broker, brokerId: 'brk_other' }, request);
    expect(foreign.subject.principal).toBeNull();
    expect(foreign.facts).toBe(NO_PRINCIPAL_FACTS);
    expect(foreign.snapshot).toBeUndefined();
  });

  it('throws not_found for a grant that does not exist', async () => {
    await expect(resolve(deps({ chains: { get: async () => null } } as never), broker, request)).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('verifies nothing the snapshot already vouches for', async () => {
    const snapshot = new TreeSnapshot('v1', 1000);
    const facts = { ...NO_PRINCIPAL_FACTS, memberOf: ['pod_1'] };
    const keys = { brokerTokenHash: 'hash-1', subjectTokenHash: '', grantId: 'grt_leaf' };
    const { hashToken } = await import('../../src/credentials/tokens');
    keys.subjectTokenHash = hashToken('art_x');
    snapshot.remember(keys, { subject: { principal: agent, expiresAtMs: null }, principal: agent, facts, podCount: 1 });
    const trees = { snapshotOf: async () => snapshot, renew: unexpected('a renewal') };
    const call = await resolve(deps({ trees } as never), { ...broker, remembered: true }, request);
    expect(call.subject).toEqual({ principal: agent, source: 'subject_token' });
    expect(call.facts).toBe(facts);
    expect(call.snapshot).toBe(snapshot);
  });
});

describe('decide (pure)', () => {
  const deps = (result: Record<string, unknown>): DecideDeps =>
    ({
      policy: { evaluate: () => ({ decisionId: 'd-1', org: { denials: [], approvals: [], shadow: [] }, ...result }) },
      trustAssertedPrincipal: false,
      localTime: () => ({ time_zone: 'UTC', weekday: 1, hour: 0, minute: 0 }),
    }) as unknown as DecideDeps;

  it('throws the refusals of the request itself', () => {
    for (const code of ['not_found', 'subject_token_invalid', 'principal_assertion_refused']) {
      expect(() => decide(deps({ allow: false, reasons: [code], reason: code }), resolved())).toThrow(ApiError);
    }
  });

  it('answers allow, ask and deny as verdicts', () => {
    expect(decide(deps({ allow: true, reasons: [], reason: 'allowed', consumes_approval: true }), resolved())).toEqual({
      kind: 'allow',
      decisionId: 'd-1',
      principal: agent,
      spendsApproval: true,
      labels: [],
    });
    expect(decide(deps({ allow: false, reasons: ['approval_required'], reason: 'approval_required' }), resolved()).kind).toBe('ask');
    expect(decide(deps({ allow: false, reasons: ['revoked'], reason: 'revoked' }), resolved())).toMatchObject({
      kind: 'deny',
      reason: 'revoked',
    });
  });
});

describe('charge (the first side effect)', () => {
  const quiet = { stamp: 's1', labels: {}, calls: {} };
  function budget(answer: BudgetAnswer) {
    const runs: BudgetRequest[] = [];
    return { runs, budget: { run: async (r: BudgetRequest) => (runs.push(r), answer) } };
  }
  const allow: Verdict = { kind: 'allow', decisionId: 'd', principal: agent, spendsApproval: false, labels: [] };
  const deny: Verdict = { kind: 'deny', decisionId: 'd', principal: agent, reason: 'revoked' };

  it('consumes for an allow and only probes otherwise, under the snapshot’s version', async () => {
    const fake = budget({ kind: 'allowed', remaining: 4, resetMs: 10, atMs: 99, session: quiet });
    const deps = { ...fake, db: unexpected('the database'), windows: { rebuild: unexpected('a rebuild') } } as unknown as ChargeDeps;
    expect(await charge(deps, resolved(), allow)).toEqual({ kind: 'taken', atMs: 99, remaining: 4, resetMs: 10 });
    await charge(deps, resolved(), deny);
    expect(fake.runs.map((r) => [r.mode, r.expectedVersion, r.levels.length])).toEqual([
      ['consume', 'v1', 2],
      ['probe', 'v1', 2],
    ]);
  });

  it('reports stale facts with the version to resolve again under', async () => {
    const deps = { ...budget({ kind: 'stale', version: 'v2', session: quiet }), db: unexpected('the database') } as unknown as ChargeDeps;
    expect(await charge(deps, resolved(), allow)).toEqual({ kind: 'stale', treeVersion: 'v2', session: quiet });
  });
});

describe('settle (the answer and its record)', () => {
  function deps(write: (row: NewCallRecord) => Promise<void>) {
    const refunds: number[] = [];
    const tallied: TalliedCheck[] = [];
    const settleDeps = {
      db: unexpected('the database'),
      trail: { write },
      tallies: { count: (check: TalliedCheck) => void tallied.push(check) },
      budget: { refund: async (_root: string, _levels: unknown, atMs: number) => void refunds.push(atMs) },
      log: { error: () => undefined },
      approvalTtlMs: 1000,
    } as unknown as SettleDeps;
    return { refunds, tallied, settleDeps };
  }
  const allow: Verdict = { kind: 'allow', decisionId: 'd-9', principal: agent, spendsApproval: false, labels: [] };

  it('writes the record before it answers, naming the decision that allowed the call', async () => {
    const rows: NewCallRecord[] = [];
    const { settleDeps, tallied } = deps(async (row) => void rows.push(row));
    const answer = await settle(settleDeps, resolved(), allow, { kind: 'taken', atMs: 5, remaining: 3, resetMs: 7 });
    expect(answer).toEqual({ decision: 'allow', callId: 'call_1', reason: 'allowed', budget: { remaining: 3, resetMs: 7 } });
    expect(rows).toEqual([expect.objectContaining({ id: 'call_1', outcome: 'pending', approval_id: 'd-9' })]);
    // Counted for the overview once recorded: allowed, with no reason or rule.
    expect(tallied).toEqual([expect.objectContaining({ decision: 'allowed', reason: '', orgRule: '' })]);
  });

  it('gives the unit back and answers 503 when the record cannot be written', async () => {
    const { settleDeps, refunds, tallied } = deps(async () => Promise.reject(new Error('disk full')));
    await expect(settle(settleDeps, resolved(), allow, { kind: 'taken', atMs: 5, remaining: 3, resetMs: 7 })).rejects.toBeInstanceOf(
      DependencyUnavailableError,
    );
    expect(refunds).toEqual([5]);
    // No record, no count.
    expect(tallied).toEqual([]);
  });

  it('records a denial without an approval id and takes nothing back', async () => {
    const rows: NewCallRecord[] = [];
    const { settleDeps, refunds, tallied } = deps(async (row) => void rows.push(row));
    const verdict: Verdict = { kind: 'deny', decisionId: 'd', principal: agent, reason: 'revoked' };
    const answer = await settle(settleDeps, resolved(), verdict, { kind: 'probed', remaining: 2, resetMs: 1 });
    expect(answer).toMatchObject({ decision: 'deny', reason: 'revoked' });
    expect(rows[0]).toMatchObject({ outcome: 'denied', approval_id: null });
    expect(refunds).toEqual([]);
    expect(tallied).toEqual([expect.objectContaining({ decision: 'denied', reason: 'revoked', orgRule: '' })]);
  });
});
