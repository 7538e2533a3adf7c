import { apisixCall, documentOf, inputOf, kongCall, refusalOf } from '../../src/protocols/opa-data/mapping';
import { ApiError } from '../../src/kernel/errors';
import { DependencyUnavailableError } from '../../src/kernel/dependency';
import fixtures from '../protocols/fixtures/opa-plugin-inputs.json';

const headers = {
  authorization: 'Bearer {{AGENT_TOKEN}}',
  'grant-id': '{{GRANT_ID}}',
  'x-broker-authorization': 'Bearer {{BROKER_TOKEN}}',
};

describe('inputOf: which input an OPA caller sent', () => {
  it('reads Kong’s documented input as the forwarded request', () => {
    expect(inputOf(fixtures.kong.input)).toEqual({
      kind: 'gateway',
      gateway: 'kong',
      call: { method: 'GET', path: '/repos/octo/hello/contents/src/a.ts?ref=main', headers: { accept: 'application/json', ...headers } },
    });
  });

  it('reads Kong’s parsed JSON body as the body', () => {
    const seen = inputOf(fixtures.kongWithParsedBody.input);
    expect(seen).toMatchObject({ kind: 'gateway', gateway: 'kong', call: { method: 'POST', path: '/mcp' } });
    expect(seen.kind === 'gateway' && JSON.parse(seen.call.body!)).toEqual(fixtures.kongWithParsedBody.input.request.http.parsed_body);
  });

  it('reads APISIX’s documented input as the forwarded request', () => {
    expect(inputOf(fixtures.apisix.input)).toEqual({
      kind: 'gateway',
      gateway: 'apisix',
      call: {
        method: 'GET',
        path: '/repos/octo/hello/contents/src/a.ts?ref=main',
        headers: { 'user-agent': 'curl/8.5.0', accept: '*/*', host: '127.0.0.1:9080', ...headers },
      },
    });
  });

  it('takes the broker check’s own body as it is', () => {
    const body = { grantId: 'grt_1', tool: 'repos.read_file', subjectToken: 'art_x', args: {} };
    expect(inputOf(body)).toEqual({ kind: 'check', body });
  });

  it.each([
    ['nothing', undefined],
    ['a number', 7],
    ['an array', [{ grantId: 'grt_1' }]],
    ['a request that is not an object', { request: 'GET /' }],
    ['Kong without a method', { request: { http: { path: '/a' } } }],
    ['APISIX with a relative path', { type: 'http', request: { method: 'GET', path: 'a/b' } }],
    ['a method that is not a token', { request: { method: 'GET /x HTTP/1.1\r\n', path: '/a' } }],
  ])('knows no input of %s', (_name, input) => {
    expect(inputOf(input)).toEqual({ kind: 'unknown' });
  });
});

describe('the gateways’ query and header shapes', () => {
  it.each([
    [{ a: '1' }, '/p?a=1'],
    [{ flag: true }, '/p?flag='],
    [{ many: ['x', 'y'] }, '/p?many=x&many=y'],
    [{ n: 3, skipped: null, nested: { a: 1 }, no: false }, '/p?n=3'],
    [{}, '/p'],
    ['not an object', '/p'],
  ])('query %j → %s', (query, path) => {
    expect(apisixCall({ method: 'get', path: '/p', query })?.path).toBe(path);
    expect(kongCall({ method: 'get', path: '/p', querystring: query })?.path).toBe(path);
  });

  it('drops a query already on the path (the shapes carry it apart), lower-cases header names, joins repeated ones, drops others', () => {
    const call = kongCall({ method: 'post', path: '/p?x=1', headers: { 'Grant-ID': 'g', accept: ['a', 'b'], odd: 7 }, body: 'raw' });
    expect(call).toEqual({ method: 'POST', path: '/p', headers: { 'grant-id': 'g', accept: 'a, b' }, body: 'raw' });
  });
});

describe('documentOf: the check’s answer as OPA’s document', () => {
  const budget = { remaining: 1, resetMs: 10 };
  it.each([
    [
      'allow',
      { decision: 'allow', callId: 'call_1', reason: 'allowed', budget },
      { allow: true, decision: 'allow', callId: 'call_1', reason: 'allowed', budget, headers: { 'x-grant-call-id': 'call_1' } },
    ],
    [
      'allow with a minted credential: it goes upstream as authorization',
      {
        decision: 'allow',
        callId: 'call_2',
        reason: 'allowed',
        budget,
        credential: { token: 'ghs_x', expiresAt: 'x', repositories: ['o/r'], permissions: {} },
      },
      { allow: true, headers: { 'x-grant-call-id': 'call_2', authorization: 'Bearer ghs_x' } },
    ],
    [
      'deny: 403',
      { decision: 'deny', callId: 'call_3', reason: 'tool_not_allowed', budget },
      { allow: false, reason: 'tool_not_allowed', status_code: 403, headers: { 'x-grant-call-id': 'call_3' } },
    ],
    [
      'budget spent: 429 and retry-after rounded up',
      { decision: 'deny', callId: 'call_4', reason: 'budget_exhausted', retryAfterMs: 1001, budget },
      { allow: false, status_code: 429, retryAfterMs: 1001, headers: { 'x-grant-call-id': 'call_4', 'retry-after': '2' } },
    ],
    [
      'approval required: 403 naming the approval',
      { decision: 'approval_required', callId: 'call_5', reason: 'approval_required', approvalId: 'apr_1', budget },
      { allow: false, status_code: 403, approvalId: 'apr_1' },
    ],
  ] as const)('%s', (_name, answer, result) => {
    const document = documentOf(answer as never);
    expect(document.result).toMatchObject(result);
    expect(document.decision_id).toBe(answer.callId);
  });
});

describe('refusalOf', () => {
  it('answers another broker’s grant exactly as an unknown one, with no decision id', () => {
    expect(refusalOf(new ApiError('not_found', 'no such grant'))).toEqual({
      result: { allow: false, reason: 'not_found', status_code: 403, headers: {} },
    });
    expect(refusalOf(new ApiError('subject_token_invalid'))?.result).toMatchObject({ allow: false, status_code: 401 });
  });

  it.each([
    ['a dependency refusal', new ApiError('dependency_unavailable')],
    ['a dependency failure', new DependencyUnavailableError('redis')],
    ['a fault', new Error('bug')],
  ])('leaves %s to the whole request: never a document', (_name, error) => {
    expect(refusalOf(error)).toBeUndefined();
  });
});
