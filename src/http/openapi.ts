import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from '../kernel/schema';
import { PROBLEMS, type ProblemCode } from '../kernel/errors';
import type { PassThroughRoute } from '../kernel/pass-through';
import { errorCodesOf, type FormSpec, type Route } from '../kernel/route';

const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    reasons: z.array(z.string()).optional(),
  })
  .openapi('Problem', { description: 'RFC 9457 problem document; `code` is stable and clients branch on it.' });

const SECURITY = {
  human: 'humanJwt',
  agent: 'agentRuntimeToken',
  broker: 'brokerToken',
} as const;

/** A form's parts as OpenAPI describes multipart bodies: text fields, and files as binary strings. */
function formSchema(form: FormSpec) {
  const part = (type: 'text' | 'file', { maxBytes, description }: { maxBytes: number; description: string }) => ({
    type: 'string',
    ...(type === 'file' ? { format: 'binary' } : {}),
    description,
    maxLength: type === 'text' ? maxBytes : undefined,
  });
  return {
    type: 'object',
    properties: {
      ...Object.fromEntries(Object.entries(form.fields).map(([name, spec]) => [name, part('text', spec)])),
      ...Object.fromEntries(Object.entries(form.files).map(([name, spec]) => [name, part('file', spec)])),
    },
  };
}

function openApiPath(path: string): string {
  return path.replace(/[:*](\w+)/g, '{$1}');
}

function errorResponses(route: Route) {
  const byStatus = new Map<number, Set<ProblemCode>>();
  for (const code of errorCodesOf(route)) {
    const problem: { status: number; alsoStatus?: number } = PROBLEMS[code];
    for (const status of problem.alsoStatus ? [problem.status, problem.alsoStatus] : [problem.status]) {
      byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
    }
  }
  return Object.fromEntries(
    [...byStatus.entries()].map(([status, codes]) => [
      String(status),
      {
        description: [...codes].map((code) => `\`${code}\`: ${PROBLEMS[code].title}`).join('; '),
        content: { 'application/problem+json': { schema: ProblemSchema } },
      },
    ]),
  );
}

export function buildOpenApiDocument(routes: readonly Route[], decisions: string, passThrough: readonly PassThroughRoute[] = []) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'humanJwt', { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  registry.registerComponent('securitySchemes', 'agentRuntimeToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'An agent runtime token: `art_…`, shown once when created.',
  });
  registry.registerComponent('securitySchemes', 'brokerToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'A broker token: `bkt_…`, printed once by `npm run admin -- broker register`.',
  });

  for (const route of routes) {
    const success = route.success;
    registry.registerPath({
      method: route.method,
      path: openApiPath(route.path),
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      security: (route.auth?.kinds ?? []).map((kind) => ({ [SECURITY[kind]]: [] })),
      request: {
        params: route.params as never,
        query: route.query as never,
        body: route.form
          ? { content: { 'multipart/form-data': { schema: formSchema(route.form) as never } }, required: true }
          : route.body
            ? { content: { 'application/json': { schema: route.body } }, required: true }
            : undefined,
      },
      responses: {
        [success.status]: {
          description: success.description,
          content: success.schema ? { 'application/json': { schema: success.schema } } : undefined,
        },
        ...errorResponses(route),
      },
    });
  }

  for (const route of passThrough) registerPassThrough(registry, route);

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Grant broker',
      version: '0.1.0',
      description: decisions,
      license: { name: 'Proprietary (UNLICENSED, see package.json)' },
    },
    servers: [{ url: '/' }],
  });
}

/** A pass-through route: one operation per method on `<prefix>/{path}`, any headers, any body. */
function registerPassThrough(registry: OpenAPIRegistry, route: PassThroughRoute): void {
  const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;
  for (const method of methods) {
    registry.registerPath({
      method,
      path: `${route.prefix}/{path}`,
      operationId: `${route.operationId}${method[0]!.toUpperCase()}${method.slice(1)}`,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      security: [{ [SECURITY.broker]: [] }],
      request: {
        params: z.strictObject({
          path: z.string().openapi({ description: "The original request's path (and query), as Envoy forwards it" }),
        }) as never,
      },
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, description]) => [
          status,
          {
            description,
            content: Number(status) >= 300 ? { 'application/problem+json': { schema: ProblemSchema } } : undefined,
          },
        ]),
      ),
    });
  }
}
