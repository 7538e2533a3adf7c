import type { Grant } from '../../typescript/src';

/**
 * A grant tree as a person would rather look at it: each grant with its status, budget use in the
 * current window (from the call trail) and expiry, children indented under their parent.
 */
export function drawTree(grants: readonly Grant[], focusId: string, used: ReadonlyMap<string, number>): string {
  const children = new Map<string | null, Grant[]>();
  for (const grant of grants) children.set(grant.parentId, [...(children.get(grant.parentId) ?? []), grant]);
  const lines: string[] = [];
  const walk = (grant: Grant, prefix: string, last: boolean, root: boolean) => {
    const branch = root ? '' : last ? '└─ ' : '├─ ';
    const budget = `${used.get(grant.id) ?? 0}/${grant.budget.calls} per ${grant.budget.windowMs / 1000}s`;
    const mark = grant.id === focusId ? ' ◀' : '';
    lines.push(`${prefix}${branch}${grant.id}  ${grant.status}  ${grant.writeMode}  ${budget}  expires ${grant.expiresAt}${mark}`);
    const kids = children.get(grant.id) ?? [];
    kids.forEach((kid, i) => walk(kid, root ? '' : `${prefix}${last ? '   ' : '│  '}`, i === kids.length - 1, false));
  };
  const roots = grants.filter((grant) => grant.parentId === null || !grants.some((g) => g.id === grant.parentId));
  roots.forEach((grant) => walk(grant, '', true, true));
  return lines.join('\n');
}
