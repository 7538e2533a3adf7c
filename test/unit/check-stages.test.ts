import type { BudgetAnswer, BudgetRequest } from '../../src/budget/sliding-window';
import type { CheckingBroker } from '../../src/broker/authenticator';
import type { Chain, CheckReads, TreeReads } from '../../src/broker/reads';
import { charge, type ChargeDeps } from '../../src/broker/check/charge';
import { decide, type DecideDeps } from '../../src/broker/check/decide';
import { resolve, type ResolveDeps } from '../../src/broker/check/resolve';
import { settle, type SettleDeps } from '../../src/broker/check/settle';
import type { TalliedCheck } from '../../src/trail/tally-writer';
import type { Resolved, Verdict } from '../../src/broker/check/stages';
import type { NewCallRecord } from '../../src/trail/writer';
import { NO_PRINCIPAL_FACTS } from '../../src/broker/tree-facts';
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
    treeVersion: 'v1',
    subject: { principal: agent, source: 'subject_token' },
    facts: NO_PRINCIPAL_FACTS,
    session: { stamp: 's1', labels: {}, calls: {} },
    ...overrides,
  };
}

describe('resolve (reads only)', () => {
  const reads = (over: Partial<CheckReads> = {}): CheckReads => ({
    chainOf: async () => chain,
    approvalOf: unexpected('the approval'),
    openApprovalOf: unexpected("the identical call's approval"),
    confirmBroker: unexpected('a broker confirmation'),
    treeAt: unexpected('the tree'),
    credentialSourceOf: unexpected('a credential source'),
    ...over,
  });
  const deps = (over: Partial<CheckReads> = {}): ResolveDeps => ({ clock: { now: () => 1000 }, reads: reads(over) });
  const session = { stamp: 's7', labels: {}, calls: {} };
  const facts = { ...NO_PRINCIPAL_FACTS, memberOf: ['pod_1'] };

  it('looks at nothing else for another broker’s grant and hands decide no subject', async () => {
    const confirmed: string[] = [];
    const confirmBroker = async (b: CheckingBroker) => void confirmed.push(b.brokerId);
    const foreign = await resolve(deps({ confirmBroker }), { ...broker, brokerId: 'brk_other' }, request);
    expect(foreign.subject.principal).toBeNull();
    expect(foreign.facts).toBe(NO_PRINCIPAL_FACTS);
    expect(foreign.treeVersion).toBeUndefined();
    expect(confirmed).toEqual(['brk_other']);
  });

  it('throws not_found for a grant that does not exist, once the broker is confirmed', async () => {
    const confirmBroker = async () => undefined;
    await expect(resolve(deps({ chainOf: async () => null, confirmBroker }), broker, request)).rejects.toMatchObject({
      code: 'not_found',
    });
    const revoked = async () => Promise.reject(new ApiError('unauthenticated'));
    await expect(resolve(deps({ chainOf: async () => null, confirmBroker: revoked }), broker, request)).rejects.toMatchObject({
      code: 'unauthenticated',
    });
  });

  it('reads the tree’s version before anything of it, then the broker, the subject and the facts under it', async () => {
    const order: string[] = [];
    const tree: TreeReads = {
      version: 'v7',
      session,
      confirmBroker: async () => void order.push('broker'),
      subjectOf: async (token) => (order.push(`subject ${token}`), { principal: agent, expiresAtMs: null }),
      factsOf: async (_chain, principal) => (order.push(`facts ${principal.id}`), facts),
    };
    const treeAt = async (rootId: string, _now: number, known?: unknown) => (order.push(`tree ${rootId} ${known ? 'known' : 'now'}`), tree);
    const call = await resolve(deps({ treeAt }), broker, request);
    expect(order).toEqual(['tree grt_root now', 'broker', 'subject art_x', 'facts agt_1']);
    expect(call).toMatchObject({ treeVersion: 'v7', session, facts, subject: { principal: agent, source: 'subject_token' } });
  });

  it('on a retry keeps the chain and the approval, and reads the tree at the version the budget script reported', async () => {
    const known: unknown[] = [];
    const tree: TreeReads = {
      version: 'v8',
      session,
      confirmBroker: async () => undefined,
      subjectOf: async () => ({ principal: agent, expiresAtMs: null }),
      factsOf: async () => facts,
    };
    const treeAt = async (_rootId: string, _now: number, state?: unknown) => (known.push(state), tree);
    const previous = resolved({ approval: { id: 'apr_1', found: false } });
    const call = await resolve(deps({ treeAt, chainOf: unexpected('the chain') }), broker, request, {
      previous,
      treeVersion: 'v8',
      session,
    });
    expect(known).toEqual([{ version: 'v8', session }]);
    expect(call).toMatchObject({ callId: previous.callId, chain: previous.chain, approval: previous.approval, treeVersion: 'v8' });
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

  it('refuses a named subject that is not the token’s principal, before any verdict; the right one goes on', () => {
    const allow = deps({ allow: true, reasons: [], reason: 'allowed' });
    for (const namedSubject of [
      { kind: 'agent' as const, id: 'agt_2' },
      { kind: 'user' as const, id: 'agt_1' },
    ]) {
      expect(() => decide(allow, resolved({ request: { ...request, namedSubject } }))).toThrow(
        expect.objectContaining({ code: 'subject_mismatch', status: 403 }),
      );
    }
    expect(decide(allow, resolved({ request: { ...request, namedSubject: agent } })).kind).toBe('allow');
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
    const deps = {
      ...fake,
      approvals: unexpected('the approvals'),
      rebuild: unexpected('a rebuild'),
    } as unknown as ChargeDeps;
    expect(await charge(deps, resolved(), allow)).toEqual({ kind: 'taken', atMs: 99, remaining: 4, resetMs: 10 });
    await charge(deps, resolved(), deny);
    expect(fake.runs.map((r) => [r.mode, r.expectedVersion, r.levels.length])).toEqual([
      ['consume', 'v1', 2],
      ['probe', 'v1', 2],
    ]);
  });

  it('reports stale facts with the version to resolve again under', async () => {
    const deps = {
      ...budget({ kind: 'stale', version: 'v2', session: quiet }),
      approvals: unexpected('the approvals'),
    } as unknown as ChargeDeps;
    expect(await charge(deps, resolved(), allow)).toEqual({ kind: 'stale', treeVersion: 'v2', session: quiet });
  });

  describe('a call an approval allows', () => {
    const spends: Verdict = { kind: 'allow', decisionId: 'd', principal: agent, spendsApproval: true, labels: [] };
    const resent = resolved({ request: { ...request, approvalId: 'apr_1' } });
    function claims(claimed: boolean) {
      const log: string[] = [];
      const claim = {
        approvalId: 'apr_1',
        commitWith: async () => void log.push('commit'),
        release: async () => void log.push('release'),
      };
      const approvals = {
        claim: async (id: string, callId: string) => (log.push(`claim ${id} for ${callId}`), claimed ? claim : undefined),
      };
      return { log, claim, approvals };
    }

    it('takes the approval before the unit, and hands settle the claim, still held', async () => {
      const { log, claim, approvals } = claims(true);
      const fake = budget({ kind: 'allowed', remaining: 4, resetMs: 10, atMs: 99, session: quiet });
      const deps = { ...fake, approvals, rebuild: unexpected('a rebuild') } as unknown as ChargeDeps;
      expect(await charge(deps, resent, spends)).toEqual({ kind: 'taken', atMs: 99, remaining: 4, resetMs: 10, claim });
      expect(fake.runs.map((r) => r.mode)).toEqual(['consume']);
      expect(log).toEqual(['claim apr_1 for call_1']);
    });

    it('gives the approval back when the budget is full, and takes no unit when another re-send used it', async () => {
      const full = claims(true);
      const exhausted = budget({ kind: 'exhausted', retryAfterMs: 5, resetMs: 5, fullLevels: [0], session: quiet });
      const deps = { ...exhausted, approvals: full.approvals, rebuild: unexpected('a rebuild') } as unknown as ChargeDeps;
      expect((await charge(deps, resent, spends)).kind).toBe('exhausted');
      expect(full.log).toEqual(['claim apr_1 for call_1', 'release']);

      const used = claims(false);
      const probe = budget({ kind: 'probed', remaining: 4, resetMs: 10, session: quiet });
      const usedDeps = { ...probe, approvals: used.approvals, rebuild: unexpected('a rebuild') } as unknown as ChargeDeps;
      expect(await charge(usedDeps, resent, spends)).toEqual({ kind: 'approval_used', remaining: 4, resetMs: 10 });
      expect(probe.runs.map((r) => r.mode)).toEqual(['probe']);
    });
  });
});

describe('settle (the answer and its record)', () => {
  function deps(write: (row: NewCallRecord) => Promise<void>) {
    const refunds: number[] = [];
    const tallied: TalliedCheck[] = [];
    const settleDeps = {
      approvals: { ask: unexpected('an approval asked for') },
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
    expect(rows).toEqual([expect.objectContaining({ id: 'call_1', outcome: 'pending', approval_id: null, decision_id: 'd-9' })]);
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

  it('commits the record with the claimed approval, and gives the approval back when it cannot', async () => {
    const committed: NewCallRecord[] = [];
    const log: string[] = [];
    const claim = {
      approvalId: 'apr_1',
      commitWith: async (row: NewCallRecord) => committed.push(row),
      release: async () => void log.push('release'),
    };
    const { settleDeps } = deps(unexpected('the group commit'));
    await settle(settleDeps, resolved(), allow, { kind: 'taken', atMs: 5, remaining: 3, resetMs: 7, claim });
    expect(committed).toEqual([expect.objectContaining({ id: 'call_1', approval_id: 'apr_1', decision_id: 'd-9' })]);

    const failing = { ...claim, commitWith: async () => Promise.reject(new Error('disk full')) };
    const { settleDeps: again, refunds } = deps(unexpected('the group commit'));
    await expect(
      settle(again, resolved(), allow, { kind: 'taken', atMs: 6, remaining: 3, resetMs: 7, claim: failing }),
    ).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(log).toEqual(['release']);
    expect(refunds).toEqual([6]);
  });

  it('asks for an approval with the record it commits with, and answers approval_required', async () => {
    const { settleDeps } = deps(unexpected('the group commit'));
    const recorded: NewCallRecord[] = [];
    const approvals = {
      ask: async (_request: unknown, recordFor: (approval: { id: string }) => NewCallRecord) => {
        recorded.push(recordFor({ id: 'apr_9' }));
        return { id: 'apr_9', expiresAt: '2026-01-01T00:00:00.000Z' };
      },
    };
    const ask: Verdict = { kind: 'ask', decisionId: 'd-7', principal: agent, checkInput: {} };
    const answer = await settle({ ...settleDeps, approvals } as unknown as SettleDeps, resolved(), ask, {
      kind: 'probed',
      remaining: 2,
      resetMs: 1,
    });
    expect(answer).toMatchObject({ decision: 'approval_required', approvalId: 'apr_9', approval: { id: 'apr_9' } });
    expect(recorded).toEqual([expect.objectContaining({ outcome: 'awaiting_approval', approval_id: 'apr_9', decision_id: 'd-7' })]);
  });

  it('records a denial without an approval id, naming its decision, and takes nothing back', async () => {
    const rows: NewCallRecord[] = [];
    const { settleDeps, refunds, tallied } = deps(async (row) => void rows.push(row));
    const verdict: Verdict = { kind: 'deny', decisionId: 'd', principal: agent, reason: 'revoked' };
    const answer = await settle(settleDeps, resolved(), verdict, { kind: 'probed', remaining: 2, resetMs: 1 });
    expect(answer).toMatchObject({ decision: 'deny', reason: 'revoked' });
    expect(rows[0]).toMatchObject({ outcome: 'denied', approval_id: null, decision_id: 'd' });
    expect(refunds).toEqual([]);
    expect(tallied).toEqual([expect.objectContaining({ decision: 'denied', reason: 'revoked', orgRule: '' })]);
  });
});
