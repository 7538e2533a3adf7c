import jsonPointer from 'jsonpointer';
import type { ToolMapping } from './config';

/**
 * A call's path argument in the spelling the grant broker matches (CONTRACT §14: relative to the
 * folder the grant's paths are about, `/`-separated, nothing to resolve). A file server such as
 * server-filesystem also takes an absolute path inside its root; with `pathRoot` (the upstream's
 * root, as it names it) such a path is made relative to it, so `/srv/files/docs/guide.md` is
 * checked as `docs/guide.md`. Only that prefix is taken off: `..`, `.` and empty segments,
 * backslashes, and absolute paths outside the root stay as they are, for the check to refuse.
 * The upstream is sent exactly the arguments the check saw.
 */
export function canonicalPaths(args: Record<string, unknown>, mapping: ToolMapping, pathRoot: string | undefined): Record<string, unknown> {
  const pointer = mapping.resource?.path;
  if (!pathRoot || !pointer) return args;
  let value: unknown;
  try {
    value = jsonPointer.get(args, pointer);
  } catch {
    return args;
  }
  if (typeof value !== 'string' || !value.startsWith(`${pathRoot}/`)) return args;
  const relative = structuredClone(args);
  jsonPointer.set(relative, pointer, value.slice(pathRoot.length + 1));
  return relative;
}
