import { checkRequestOf, decisionOf, evaluationsOf, refusalOf, shortCircuits } from '../../src/protocols/authzen/mapping';
import type { EvaluationRequest } from '../../src/protocols/authzen/schemas';
import { ApiError } from '../../src/kernel/errors';
import { DependencyUnavailableError } from '../../src/kernel/dependency';

const grantId = 'grt_01jd6x3c4vf8r9t2y5u7w0z1ab';
const agent = { type: 'agent', id: 'agt_1', properties: { token: 'art_x' } };
const base: EvaluationRequest = {
  subject: agent,
  action: { name: 'repos.read_file' },
  resource: { type: 'grant', id: grantId, properties: { args: { path: 'a' } } },
};

describe('checkRequestOf: an evaluation as the broker check’s input', () => {
  it.each([
    [
      'an agent',
      base,
      { grantId, tool: 'repos.read_file', subjectToken: 'art_x', args: { path: 'a' }, namedSubject: { kind: 'agent', id: 'agt_1' } },
    ],
    [
      'a human, no args, a credential and an approval asked for',
      {
        ...base,
        subject: { type: 'user', id: 'u1', properties: { token: 'jwt' } },
        resource: { type: 'grant', id: grantId },
        context: { credential: true, approvalId: 'apr_1' },
      },
      {
        grantId,
        tool: 'repos.read_file',
        subjectToken: 'jwt',
        args: {},
        credential: true,
        approvalId: 'apr_1',
        namedSubject: { kind: 'user', id: 'u1' },
      },
    ],
    [
      'context members it does not read are ignored; credential only when exactly true',
      { ...base, context: { credential: 'yes', time: '1985-10-26T01:22-07:00' } },
      { grantId, tool: 'repos.read_file', subjectToken: 'art_x', args: { path: 'a' }, namedSubject: { kind: 'agent', id: 'agt_1' } },
    ],
  ] as const)('%s', (_name, evaluation, request) => {
    expect(checkRequestOf(evaluation as EvaluationRequest)).toEqual({ kind: 'check', request });
  });

  it.each([
    ['another resource type', { ...base, resource: { type: 'document', id: '1' } }, 'resource_type_unsupported'],
    ['another subject type', { ...base, subject: { type: 'service', id: 's', properties: { token: 't' } } }, 'subject_type_unsupported'],
    [
      'an inherited subject type name',
      { ...base, subject: { type: 'constructor', id: 's', properties: { token: 't' } } },
      'subject_type_unsupported',
    ],
    ['no token', { ...base, subject: { type: 'agent', id: 'agt_1' } }, 'subject_token_missing'],
    [
      'a token that is not a string',
      { ...base, subject: { type: 'agent', id: 'agt_1', properties: { token: 7 } } },
      'subject_token_missing',
    ],
    ['args that are an array', { ...base, resource: { ...base.resource, properties: { args: [1] } } }, 'invalid_request'],
    ['a tool name the check refuses', { ...base, action: { name: 'no spaces' } }, 'invalid_request'],
    ['a grant id too long', { ...base, resource: { type: 'grant', id: 'g'.repeat(65) } }, 'invalid_request'],
  ] as const)('refuses %s without a check', (_name, evaluation, reason) => {
    const mapped = checkRequestOf(evaluation as EvaluationRequest);
    expect(mapped).toMatchObject({ kind: 'refused', decision: { decision: false, context: { reason, error: { status: 400 } } } });
  });

  it('names the field, never the value, of a refused token', () => {
    const mapped = checkRequestOf({ ...base, subject: { type: 'agent', id: 'a', properties: { token: `secret${'x'.repeat(9000)}` } } });
    expect(mapped.kind).toBe('refused');
    expect(JSON.stringify(mapped)).not.toContain('secret');
    expect(JSON.stringify(mapped)).toContain('subject.properties.token');
  });
});

describe('decisionOf: the check’s answer as a decision', () => {
  const budget = { remaining: 1, resetMs: 10 };
  const explanation = { rule: 'broker.check.tool_not_allowed', level: 0, grantId, unlock: 'attenuate_from_parent' as const };
  it.each([
    [
      'allow',
      { decision: 'allow', callId: 'call_1', reason: 'allowed', budget },
      { decision: true, context: { reason: 'allowed', callId: 'call_1' } },
    ],
    [
      'deny, with its explanation',
      { decision: 'deny', callId: 'call_2', reason: 'tool_not_allowed', explanation, budget },
      { decision: false, context: { reason: 'tool_not_allowed', callId: 'call_2', explanation } },
    ],
    [
      'approval required: false, with the approval to wait for',
      {
        decision: 'approval_required',
        callId: 'call_3',
        reason: 'approval_required',
        approvalId: 'apr_1',
        approval: { id: 'apr_1', expiresAt: 'x' },
        budget,
      },
      { decision: false, context: { reason: 'approval_required', callId: 'call_3', approvalId: 'apr_1' } },
    ],
    [
      'budget spent, with when to retry',
      { decision: 'deny', callId: 'call_4', reason: 'budget_exhausted', retryAfterMs: 1500, budget },
      { decision: false, context: { reason: 'budget_exhausted', callId: 'call_4', retryAfterMs: 1500 } },
    ],
    [
      'an org rule, with its message',
      { decision: 'deny', callId: 'call_5', reason: 'after_hours', message: 'not at night', budget },
      { decision: false, context: { reason: 'after_hours', callId: 'call_5', message: 'not at night' } },
    ],
  ] as const)('%s', (_name, answer, decision) => {
    expect(decisionOf(answer as never)).toEqual(decision);
  });
});

describe('refusalOf: what the check refused, as one evaluation’s false decision', () => {
  it.each([
    [
      'not_found',
      new ApiError('not_found', 'no such grant'),
      { reason: 'not_found', error: { status: 404, message: 'Resource not found' } },
    ],
    ['subject_token_invalid', new ApiError('subject_token_invalid'), { reason: 'subject_token_invalid', error: { status: 401 } }],
    ['subject_mismatch', new ApiError('subject_mismatch'), { reason: 'subject_mismatch', error: { status: 403 } }],
    [
      'credential_unavailable',
      new ApiError('credential_unavailable', 'x', {}, {}, 422),
      { reason: 'credential_unavailable', error: { status: 422 } },
    ],
  ])('%s', (_name, error, context) => {
    expect(refusalOf(error)).toMatchObject({ decision: false, context });
  });

  it.each([
    ['a dependency refusal', new ApiError('dependency_unavailable')],
    ['a dependency failure', new DependencyUnavailableError('redis')],
    ['a fault', new Error('bug')],
    ['thrown text', 'thrown text'],
  ])('leaves %s to the whole request (never a decision)', (_name, error) => {
    expect(refusalOf(error)).toBeUndefined();
  });
});

describe('shortCircuits', () => {
  it.each([
    ['execute_all', true, false],
    ['execute_all', false, false],
    ['deny_on_first_deny', true, false],
    ['deny_on_first_deny', false, true],
    ['permit_on_first_permit', true, true],
    ['permit_on_first_permit', false, false],
  ] as const)('%s after %s: %s', (semantic, decision, stops) => {
    expect(shortCircuits(semantic, { decision })).toBe(stops);
  });
});

describe('evaluationsOf: defaults and members', () => {
  const other = { type: 'grant', id: 'grt_other' };
  it.each([
    ['no evaluations: the top level is one evaluation', base, { single: true, evaluations: [base] }],
    ['an empty array: the same', { ...base, evaluations: [] }, { single: true, evaluations: [base] }],
    [
      'members take the defaults, and a member’s own key replaces the default whole',
      { ...base, context: { a: 1 }, evaluations: [{}, { resource: other, context: { b: 2 } }] },
      {
        single: false,
        evaluations: [
          { ...base, context: { a: 1 } },
          { ...base, resource: other, context: { b: 2 } },
        ],
      },
    ],
  ])('%s', (_name, batch, expected) => {
    expect(evaluationsOf(batch as never)).toEqual(expected);
  });

  it.each([
    ['no top level and no members', {}, 'the request has no subject, action, resource'],
    ['a member missing the action', { subject: agent, evaluations: [{ resource: other }] }, 'evaluations[0] has no action'],
  ])('refuses %s with a 400', (_name, batch, detail) => {
    expect(() => evaluationsOf(batch as never)).toThrow(expect.objectContaining({ code: 'invalid_request', status: 400 }));
    expect(() => evaluationsOf(batch as never)).toThrow(detail);
  });
});
