import { ToolName, z } from '../../kernel/schema';

/**
 * A broker's route map: how a plain HTTP API's requests, and MCP methods other than `tools/call`,
 * become the broker check's tool and arguments. Pure: the schema, and matching a request to it.
 */

export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export const MAX_ROUTES = 200;

/**
 * `/repos/{owner}/{repo}/contents/{path*}`: literal segments (never `.` or `..`, which no request
 * path matches), `{name}` one segment, a last `{name*}` the rest.
 */
const PATH_TEMPLATE =
  /^(\/((?!\.\.?(?:\/|$))[A-Za-z0-9._~!$&'()*+,;=:@-]+|\{[A-Za-z_][A-Za-z0-9_]{0,63}\}))*(\/\{[A-Za-z_][A-Za-z0-9_]{0,63}\*\})?$/;

const HttpRoute = z
  .strictObject({
    method: z.enum(ROUTE_METHODS),
    path: z
      .string()
      .max(512)
      .regex(PATH_TEMPLATE, 'a path template: /literal/{param}/… with at most one last {rest*}')
      .openapi({ example: '/repos/{owner}/{repo}/contents/{path*}' }),
    tool: ToolName.optional().openapi({ description: 'The tool a matching request calls (or `mcp: true`)' }),
    mcp: z.literal(true).optional().openapi({
      description: "An MCP endpoint: the tool and arguments are read from the JSON-RPC body's `tools/call`, not from the path",
    }),
    credential: z.boolean().optional().openapi({
      description: "On allow, mint the call's credential (§18) and pass it upstream as `authorization: Bearer …`",
    }),
  })
  .refine((route) => (route.tool === undefined) !== (route.mcp === undefined), {
    message: 'name exactly one of tool and mcp',
    path: ['tool'],
  })
  .refine((route) => new Set(paramNames(route.path)).size === paramNames(route.path).length, {
    message: 'a parameter is named twice',
    path: ['path'],
  });

const McpMethodRoute = z.strictObject({
  mcpMethod: z
    .string()
    .regex(/^(resources|prompts|completion|logging|sampling|elicitation|roots)\/[A-Za-z/_]{1,64}$/, 'an MCP method such as resources/read')
    .openapi({ description: 'An MCP method other than tools/call, checked as this tool with its `params` as arguments' }),
  tool: ToolName,
  credential: z.boolean().optional(),
});

export const RouteMapBody = z
  .strictObject({
    routes: z.array(z.union([HttpRoute, McpMethodRoute])).max(MAX_ROUTES),
  })
  .openapi('RouteMap', {
    description:
      "A broker's route map for Envoy external authorization. HTTP routes map a method and a path template to a tool; " +
      'path parameters, query parameters and a JSON object body become its arguments (a path parameter wins over a query ' +
      'parameter, which wins over a body field of the same name). The first route that matches decides.',
  });

export type RouteMap = z.output<typeof RouteMapBody>['routes'];
export type HttpRouteEntry = z.output<typeof HttpRoute>;

function paramNames(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z0-9_]+)\*?\}/g)].map((match) => match[1]!);
}

/** A request path split into decoded segments, or null when it is not one we may match. */
function segmentsOf(path: string): string[] | null {
  if (!path.startsWith('/')) return null;
  const segments: string[] = [];
  for (const raw of path.slice(1).split('/')) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return null;
    }
    // `..` walks out of what the template names; NUL and encoded slashes change what a segment is.
    if (segment === '.' || segment === '..' || segment.includes('\u0000') || segment.includes('/') || segment.includes('\\')) {
      return null;
    }
    segments.push(segment);
  }
  return segments;
}

export type RouteMatch = { kind: 'route'; route: HttpRouteEntry; params: Record<string, string> } | { kind: 'none' } | { kind: 'bad_path' };

/** The first HTTP route of the map matching this method and path (without its query). */
export function matchRoute(routes: RouteMap, method: string, path: string): RouteMatch {
  const segments = segmentsOf(path);
  if (!segments) return { kind: 'bad_path' };
  for (const route of routes) {
    if (!('method' in route) || route.method !== method.toUpperCase()) continue;
    const params = matchTemplate(route.path, segments);
    if (params) return { kind: 'route', route, params };
  }
  return { kind: 'none' };
}

function matchTemplate(template: string, segments: string[]): Record<string, string> | null {
  const parts = template === '' ? [] : template.slice(1).split('/');
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i += 1) {
    const part = parts[i]!;
    const rest = /^\{(\w+)\*\}$/.exec(part);
    if (rest) {
      const tail = segments.slice(i);
      if (tail.length === 0 || tail.some((segment) => segment === '')) return null;
      params[rest[1]!] = tail.join('/');
      return params;
    }
    const segment = segments[i];
    if (segment === undefined) return null;
    const param = /^\{(\w+)\}$/.exec(part);
    if (param) {
      if (segment === '') return null;
      params[param[1]!] = segment;
    } else if (part !== segment) return null;
  }
  return segments.length === parts.length ? params : null;
}

/** The route naming this MCP method, if any. */
export function mcpMethodRoute(routes: RouteMap, method: string) {
  for (const route of routes) if ('mcpMethod' in route && route.mcpMethod === method) return route;
  return undefined;
}
