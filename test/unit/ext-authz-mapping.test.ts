import { fromAnswer, toCheck, type ForwardedCall } from '../../src/protocols/ext-authz/mapping';
import { matchRoute, RouteMapBody, type RouteMap } from '../../src/protocols/ext-authz/route-map';

const routes: RouteMap = RouteMapBody.parse({
  routes: [
    { method: 'GET', path: '/repos/{owner}/{repo}/contents/{path*}', tool: 'repos.read_file', credential: true },
    { method: 'GET', path: '/repos/{owner}/{repo}/pulls', tool: 'pulls.list' },
    { method: 'POST', path: '/mcp', mcp: true },
    { mcpMethod: 'resources/read', tool: 'resources.read' },
  ],
}).routes;

const agent = { authorization: 'Bearer art_abc', 'grant-id': 'grt_1' };
const call = (over: Partial<ForwardedCall>): ForwardedCall => ({ method: 'GET', path: '/', headers: agent, ...over });
const rpc = (method: string, params?: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

describe('ext_authz request mapping', () => {
  it.each<[string, ForwardedCall, unknown]>([
    [
      'a REST route: path parameters win over query, query over body',
      call({ path: '/repos/acme/api/contents/src/a%20b.ts?ref=main&repo=evil', body: '' }),
      {
        kind: 'check',
        check: {
          grantId: 'grt_1',
          tool: 'repos.read_file',
          subjectToken: 'art_abc',
          credential: true,
          args: { owner: 'acme', repo: 'api', path: 'src/a b.ts', ref: 'main' },
        },
      },
    ],
    [
      'repeated query parameters become a list',
      call({ path: '/repos/acme/api/pulls?state=open&state=closed' }),
      {
        kind: 'check',
        check: expect.objectContaining({
          tool: 'pulls.list',
          credential: false,
          args: { owner: 'acme', repo: 'api', state: ['open', 'closed'] },
        }),
      },
    ],
    [
      'the method must match',
      call({ method: 'DELETE', path: '/repos/acme/api/pulls' }),
      { kind: 'refuse', status: 403, reason: 'no_route', detail: expect.any(String) },
    ],
    ['no route', call({ path: '/orgs/acme' }), expect.objectContaining({ status: 403, reason: 'no_route' })],
    ['a {rest*} needs one segment', call({ path: '/repos/acme/api/contents/' }), expect.objectContaining({ reason: 'no_route' })],
    ['.. in a path', call({ path: '/repos/acme/api/contents/a/../../b' }), expect.objectContaining({ status: 400 })],
    ['an encoded slash', call({ path: '/repos/acme%2fx/api/pulls' }), expect.objectContaining({ status: 400 })],
    ['a bad escape', call({ path: '/repos/%zz/api/pulls' }), expect.objectContaining({ status: 400 })],
    [
      'no agent credential',
      call({ headers: { 'grant-id': 'grt_1' }, path: '/repos/acme/api/pulls' }),
      expect.objectContaining({ status: 401 }),
    ],
    [
      'no grant',
      call({ headers: { authorization: 'Bearer art_abc' }, path: '/repos/acme/api/pulls' }),
      expect.objectContaining({ status: 403, reason: 'grant_required' }),
    ],
    ['a REST body that is not an object', call({ path: '/repos/acme/api/pulls', body: '[1]' }), expect.objectContaining({ status: 400 })],
    [
      'MCP tools/call from the body',
      call({ method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'repos.read_file', arguments: { path: 'a' } }) }),
      { kind: 'check', check: expect.objectContaining({ tool: 'repos.read_file', args: { path: 'a' }, credential: false }) },
    ],
    [
      "MCP from Envoy's filter metadata, whatever the path",
      call({
        method: 'POST',
        path: '/anything',
        mcp: { method: 'tools/call', params: { name: 'pulls.list', arguments: { state: 'open' } } },
      }),
      { kind: 'check', check: expect.objectContaining({ tool: 'pulls.list', args: { state: 'open' } }) },
    ],
    [
      'MCP initialize passes',
      call({ method: 'POST', path: '/mcp', body: rpc('initialize', {}) }),
      { kind: 'pass', subjectToken: 'art_abc' },
    ],
    [
      'MCP notifications pass',
      call({ method: 'POST', path: '/mcp', mcp: { method: 'notifications/initialized' } }),
      { kind: 'pass', subjectToken: 'art_abc' },
    ],
    [
      'an MCP method a route names',
      call({ method: 'POST', path: '/mcp', body: rpc('resources/read', { uri: 'x' }) }),
      { kind: 'check', check: expect.objectContaining({ tool: 'resources.read', args: { uri: 'x' } }) },
    ],
    [
      'another MCP method',
      call({ method: 'POST', path: '/mcp', body: rpc('prompts/get', {}) }),
      expect.objectContaining({ status: 403, reason: 'method_not_allowed' }),
    ],
    ['a JSON-RPC batch', call({ method: 'POST', path: '/mcp', body: `[${rpc('tools/list')}]` }), expect.objectContaining({ status: 400 })],
    [
      'tools/call without a name',
      call({ method: 'POST', path: '/mcp', body: rpc('tools/call', { arguments: {} }) }),
      expect.objectContaining({ status: 400 }),
    ],
    [
      'tools/call with list arguments',
      call({ method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'a', arguments: [1] }) }),
      expect.objectContaining({ status: 400 }),
    ],
    // A JSON-RPC body sent to a REST route is that route's body, never an MCP message that passes.
    [
      'a JSON-RPC body on a REST route',
      call({ path: '/repos/acme/api/pulls', body: rpc('initialize', {}) }),
      { kind: 'check', check: expect.objectContaining({ tool: 'pulls.list' }) },
    ],
  ])('%s', (_name, forwarded, expected) => {
    expect(toCheck(forwarded, routes)).toEqual(expected);
  });

  it("takes the grant from an MCP host's access token, and refuses a grant-id header that names another", () => {
    const host = { authorization: 'Bearer eyJ.a.b' };
    const message = { method: 'POST', path: '/mcp', body: rpc('tools/call', { name: 'pulls.list', arguments: {} }) };
    expect(toCheck(call({ ...message, headers: host }), routes, 'grt_child')).toMatchObject({
      kind: 'check',
      check: { grantId: 'grt_child' },
    });
    expect(toCheck(call({ ...message, headers: { ...host, 'grant-id': 'grt_child' } }), routes, 'grt_child')).toMatchObject({
      kind: 'check',
    });
    for (const other of [message, { method: 'POST', path: '/mcp', body: rpc('ping') }]) {
      expect(toCheck(call({ ...other, headers: { ...host, 'grant-id': 'grt_root' } }), routes, 'grt_child')).toMatchObject({
        kind: 'refuse',
        status: 400,
        reason: 'grant_mismatch',
      });
    }
  });

  it('matches templates segment by segment', () => {
    expect(matchRoute(routes, 'get', '/repos/a/b/contents/x/y/z')).toMatchObject({
      kind: 'route',
      params: { owner: 'a', repo: 'b', path: 'x/y/z' },
    });
    expect(matchRoute(routes, 'GET', '/repos/a/b/pulls/extra')).toEqual({ kind: 'none' });
    expect(matchRoute(routes, 'GET', '/repos//b/pulls')).toEqual({ kind: 'none' });
  });
});

describe('ext_authz answer mapping', () => {
  const budget = { remaining: 3, resetMs: 1000 };
  it.each<[string, Parameters<typeof fromAnswer>[0], unknown]>([
    [
      'allow removes the agent credential and names the call',
      { decision: 'allow', callId: 'call_1', reason: 'allowed', budget },
      { allow: true, callId: 'call_1', setHeaders: { 'x-grant-call-id': 'call_1' }, removeHeaders: ['grant-id', 'authorization'] },
    ],
    [
      'allow with a credential replaces the agent credential',
      {
        decision: 'allow',
        callId: 'call_1',
        reason: 'allowed',
        budget,
        credential: { token: 'ghs_x', expiresAt: '', repositories: [], permissions: {} },
      },
      {
        allow: true,
        callId: 'call_1',
        setHeaders: { 'x-grant-call-id': 'call_1', authorization: 'Bearer ghs_x' },
        removeHeaders: ['grant-id'],
      },
    ],
    [
      'deny is a 403 with the reason',
      { decision: 'deny', callId: 'call_2', reason: 'revoked', budget, explanation: { rule: 'r', level: 0, grantId: 'g', unlock: 'none' } },
      expect.objectContaining({
        allow: false,
        status: 403,
        headers: { 'x-grant-call-id': 'call_2' },
        body: expect.objectContaining({ reason: 'revoked', callId: 'call_2', explanation: expect.objectContaining({ rule: 'r' }) }),
      }),
    ],
    [
      'a spent budget is a 429 with retry-after rounded up',
      { decision: 'deny', callId: 'call_3', reason: 'budget_exhausted', budget, retryAfterMs: 1001 },
      expect.objectContaining({ status: 429, headers: { 'x-grant-call-id': 'call_3', 'retry-after': '2' } }),
    ],
    [
      'approval required is a 403 naming the approval',
      { decision: 'approval_required', callId: 'call_4', reason: 'approval_required', approvalId: 'apr_1', budget },
      expect.objectContaining({
        status: 403,
        headers: { 'x-grant-call-id': 'call_4', 'x-grant-approval-id': 'apr_1' },
        body: expect.objectContaining({ approvalId: 'apr_1' }),
      }),
    ],
  ])('%s', (_name, answer, expected) => {
    expect(fromAnswer(answer)).toEqual(expected);
  });
});
