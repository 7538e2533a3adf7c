import { PROBLEMS } from '../../src/kernel/errors';
import type { Route } from '../../src/kernel/route';
import { allRoutes } from '../support/routes';
import { startService, type TestService } from '../support/service';

/**
 * The OpenAPI 3.1 document (issue 2, item 8) covers every route of allRoutes with its method and
 * error responses. It iterates allRoutes, so routes added later are checked without editing this.
 */
type Operation = {
  security?: Array<Record<string, unknown>>;
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content: Record<string, unknown> };
};

let service: TestService;
let doc: { openapi: string; info: { description: string }; paths: Record<string, Record<string, Operation>> };

beforeAll(async () => {
  service = await startService();
  const res = await service.http.get('/api/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  doc = res.body;
});
afterAll(() => service.close());

const label = (route: Route) => `${route.method.toUpperCase()} ${route.path}`;
const operationOf = (route: Route): Operation | undefined => doc.paths[route.path.replace(/[:*](\w+)/g, '{$1}')]?.[route.method];
const errorStatuses = (operation: Operation) => Object.keys(operation.responses).filter((status) => Number(status) >= 400);

describe('GET /api/openapi.json', () => {
  it('is an OpenAPI 3.1 document that publishes the decisions taken where the spec is silent', () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.description).toContain('unknown query parameters are a 400');
  });

  it('has as many operations as allRoutes, and at least the foundation routes', () => {
    // Pass-through routes (Envoy's HTTP ext_authz) take any path below their prefix: one operation per method.
    const routed = Object.entries(doc.paths).filter(([path]) => !path.startsWith('/ext-authz/'));
    const operations = routed.flatMap(([, methods]) => Object.keys(methods));
    expect(operations).toHaveLength(allRoutes.length);
    expect(Object.keys(doc.paths['/ext-authz/{path}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch', 'post', 'put']);
    const labels = allRoutes.map(label);
    for (const foundation of [
      'POST /api/pods',
      'GET /api/pods/:podId',
      'POST /api/pods/:podId/members',
      'DELETE /api/pods/:podId/members/:userId',
      'POST /api/connections',
      'GET /api/connections/:connectionId',
      'PATCH /api/connections/:connectionId',
      'POST /api/registry/pods/:podId/agents',
      'DELETE /api/registry/pods/:podId/agents/:name',
      'GET /api/registry/pods/:podId/agents/:name/runtime-tokens',
      'POST /api/registry/pods/:podId/agents/:name/runtime-tokens',
      'DELETE /api/registry/pods/:podId/agents/:name/runtime-tokens/:tokenId',
      'GET /healthz',
      'GET /readyz',
    ]) {
      expect(labels).toContain(foundation);
    }
  });

  describe.each(allRoutes.map((route) => [label(route), route] as const))('%s', (_label, route) => {
    it('is documented with its method, path parameters and success response', () => {
      const operation = operationOf(route);
      expect(operation).toBeDefined();
      expect(operation!.responses[String(route.success.status)]).toBeDefined();
      const pathParams = [...route.path.matchAll(/[:*](\w+)/g)].map((m) => m[1]);
      const documented = (operation!.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      expect(documented.sort()).toEqual(pathParams.sort());
      if (route.body) expect(operation!.requestBody?.content).toHaveProperty(['application/json']);
    });

    it('documents its error responses as problem documents, each naming its codes', () => {
      const operation = operationOf(route)!;
      const statuses = errorStatuses(operation);
      expect(statuses).toEqual(expect.arrayContaining(['400', '500', '503']));
      for (const status of statuses) {
        expect(operation.responses[status]!.content).toHaveProperty(['application/problem+json']);
        expect(operation.responses[status]!.description).toMatch(/`[a-z_]+`/);
      }
      for (const code of route.errors ?? []) {
        expect(operation.responses[String(PROBLEMS[code].status)]?.description).toContain(`\`${code}\``);
      }
    });

    it(route.auth ? 'takes auth: documents 401 and 403 and a security requirement' : 'is public: no 401', () => {
      const operation = operationOf(route)!;
      if (route.auth) {
        expect(operation.responses['401']?.description).toContain('`unauthenticated`');
        expect(operation.responses['403']?.description).toContain('`credential_not_accepted`');
        expect(operation.security?.length).toBe(route.auth.kinds.length);
      } else {
        // Public, unless an operator's token guards it (METRICS_TOKEN on /metrics): then it says so.
        if (route.errors?.includes('unauthenticated')) expect(operation.responses['401']?.description).toContain('`unauthenticated`');
        else expect(operation.responses['401']).toBeUndefined();
        expect(operation.security ?? []).toEqual([]);
      }
    });

    if (route.path.includes(':')) {
      it('documents 404 for a resource that does not exist or is out of scope', () => {
        expect(operationOf(route)!.responses['404']?.description).toContain('`not_found`');
      });
    }
  });

  it('leaves no route that takes auth without a documented 401', () => {
    const missing = allRoutes.filter((route) => route.auth !== null && !operationOf(route)?.responses['401']).map(label);
    expect(missing).toEqual([]);
  });
});
