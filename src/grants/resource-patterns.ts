import { z } from '../kernel/schema';

/**
 * Resource patterns. `*` matches within one `/`-separated segment; in paths, a
 * whole segment `**` matches across segments, and a last `/**` the folder itself too (`docs/**`
 * holds `docs`: a listing of the folder is within it). Nothing else is special: the characters glob
 * matching would read as syntax (`? [ ] { } \ !`) are refused, so a pattern means exactly what it
 * shows, and so are NUL, control characters, spaces and empty segments.
 */
const SEGMENT_CHARS = /^[A-Za-z0-9._*@+=,:~%#$&'()-]+$/;
const MAX_PATTERNS = 50;

function patternOf(kind: 'repository' | 'ref' | 'path', example: string) {
  return z
    .string()
    .min(1)
    .max(256)
    .superRefine((pattern, ctx) => {
      const segments = pattern.split('/');
      const problem = segments.some((segment) => segment === '')
        ? 'no empty segment, leading or trailing `/`'
        : segments.some((segment) => segment !== '**' && !SEGMENT_CHARS.test(segment))
          ? "letters, digits, `*` and . _ @ + = , : ~ % # $ & ' ( ) - within segments"
          : segments.some((segment) => segment.includes('**') && (kind !== 'path' || segment !== '**'))
            ? kind === 'path'
              ? '`**` only as a whole segment'
              : '`**` only in paths'
            : kind === 'repository' && segments.length !== 2
              ? '`owner/name`'
              : undefined;
      if (problem) ctx.addIssue({ code: 'custom', message: `a ${kind} pattern: ${problem}` });
    })
    .openapi({ example });
}

const patterns = (kind: 'repository' | 'ref' | 'path', example: string) =>
  z
    .array(patternOf(kind, example))
    .min(1)
    .max(MAX_PATTERNS)
    .refine((list) => new Set(list).size === list.length, 'patterns must be unique')
    .optional();

export const ResourcesSchema = z
  .strictObject({
    repositories: patterns('repository', 'acme/api-*'),
    refs: patterns('ref', 'refs/heads/feature/*'),
    paths: patterns('path', 'docs/**'),
  })
  .openapi('GrantResources', {
    description:
      "What the grant's tools may touch: `*` within a segment, `**` (paths only) across segments; a last `/**` also matches " +
      'the folder itself (`docs/**`: `docs` and everything in it). An omitted dimension is ' +
      'unrestricted; a call whose tool names no value for a constrained dimension is denied `resource_unknown`.',
  });

export type Resources = z.infer<typeof ResourcesSchema>;

/**
 * A child's resources: the dimensions it names, and the parent's for every dimension it does not
 * (it inherits them, like any omitted field). Whether each named pattern narrows the parent's is
 * for grants/attenuate to say.
 */
export function inheritResources(parent: Resources | null, child: Resources | undefined): Resources | null {
  if (!child) return parent;
  const merged = { ...(parent ?? {}), ...withoutUndefined(child) };
  return Object.keys(merged).length > 0 ? merged : null;
}

function withoutUndefined(resources: Resources): Resources {
  return Object.fromEntries(Object.entries(resources).filter(([, value]) => value !== undefined));
}
