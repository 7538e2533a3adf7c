import type { CallRecord, Grant, GrantBrokerClient } from '@grant-broker/client';

/** Outcomes that took a unit of budget: never `denied`, never `awaiting_approval`. */
const COUNTED = new Set<CallRecord['outcome']>(['pending', 'succeeded', 'failed']);
const PAGE = 200;

export interface BudgetUse {
  /** Units used in the window that ends now: calls through this grant or any grant below it. */
  used: number;
  calls: number;
  windowMs: number;
  /** The window's start (the service's clock): calls requested after it count. */
  since: string;
}

export interface GrantTree {
  focus: Grant;
  /** What is drawn: the focus's ancestors, the focus, and every grant below it. */
  drawn: Grant[];
  use: Map<string, BudgetUse>;
  /** Why the figures may count fewer calls than the service does (grants the caller cannot see). */
  gaps: string[];
}

/**
 * A grant's tree with the budget use the service counts: a call allowed through a
 * grant takes one unit at that grant and at every ancestor, so a grant's use in its current window
 * is the number of allowed calls (`pending`, `succeeded`, `failed`) requested within that window
 * through the grant itself or any grant below it; the service rebuilds its windows from the trail
 * the same way (src/budget/rebuild.ts). The API has no budget-use field, so this reads the call
 * trails (`GET /api/grants/:id/calls`, newest first, paged back to the window's start) of every
 * grant of the tree the caller can read. "Now" is the service's clock, taken from its `Date`
 * header (to the second), so the client's clock does not move the window; a budget of more than
 * 1000 calls is counted per bucket by the service and may differ here by one bucket's calls.
 */
export async function loadTree(c: GrantBrokerClient, grantId: string): Promise<GrantTree> {
  let serviceNow = Date.now();
  const timed = <R extends { response: Response }>(call: Promise<R>) =>
    call.then((answer) => {
      const date = Date.parse(answer.response.headers.get('date') ?? '');
      if (!Number.isNaN(date)) serviceNow = date;
      return answer;
    });
  const getGrant = (id: string) => c.unwrap(timed(c.api.GET('/api/grants/{grantId}', { params: { path: { grantId: id } } })));
  const gaps: string[] = [];

  const focus = await getGrant(grantId);
  const chain = [focus];
  while (chain[0]!.parentId) {
    const parent = await getGrant(chain[0]!.parentId).catch(() => undefined);
    if (!parent) {
      gaps.push(`${chain[0]!.parentId} and above are not readable with this token: their use is not shown`);
      break;
    }
    chain.unshift(parent);
  }

  // Descendants are listed through a pod: every grant of a tree targets its pod or a seat of it.
  const podId = [...chain].reverse().find((g) => g.target.kind === 'pod')?.target.id;
  const known = new Map(chain.map((g) => [g.id, g]));
  if (podId) {
    for (let cursor: string | undefined; ;) {
      const page = await c.unwrap(
        timed(
          c.api.GET('/api/pods/{podId}/grants', { params: { path: { podId }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } } }),
        ),
      );
      for (const g of page.items) if (g.rootId === focus.rootId && !known.has(g.id)) known.set(g.id, g);
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
  } else {
    gaps.push('no grant of this chain targets a pod, so grants below it cannot be listed: use counts the grants shown only');
  }

  const children = childrenOf([...known.values()]);
  const subtrees = new Map<string, Grant[]>();
  const below = (id: string): Grant[] => {
    let found = subtrees.get(id);
    if (!found) subtrees.set(id, (found = (children.get(id) ?? []).flatMap((kid) => [kid, ...below(kid.id)])));
    return found;
  };
  const drawn = [...chain, ...below(focus.id)];

  // Every grant below the topmost one shown spends units of what is shown. A child's window is at
  // least its parent's (attenuation), so reading a grant's own window back covers its ancestors'.
  const spenders = [chain[0]!, ...below(chain[0]!.id)];
  const counted = new Map<string, number[]>();
  for (const g of spenders) counted.set(g.id, await allowedCallTimes(c, g, () => serviceNow, timed));

  const use = new Map<string, BudgetUse>();
  for (const g of drawn) {
    const since = serviceNow - g.budget.windowMs;
    const used = [g, ...below(g.id)].reduce((sum, each) => sum + (counted.get(each.id) ?? []).filter((at) => at > since).length, 0);
    use.set(g.id, { used, calls: g.budget.calls, windowMs: g.budget.windowMs, since: new Date(since).toISOString() });
  }
  return { focus, drawn, use, gaps };
}

/** The request times of a grant's allowed calls within its window, paged newest first. */
async function allowedCallTimes(
  c: GrantBrokerClient,
  grant: Grant,
  now: () => number,
  timed: <R extends { response: Response }>(call: Promise<R>) => Promise<R>,
): Promise<number[]> {
  const times: number[] = [];
  for (let cursor: string | undefined; ;) {
    const page = await c.unwrap(
      timed(
        c.api.GET('/api/grants/{grantId}/calls', {
          params: { path: { grantId: grant.id }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    );
    const since = now() - grant.budget.windowMs;
    let older = false;
    for (const call of page.items) {
      const at = Date.parse(call.requestedAt);
      if (at <= since) older = true;
      else if (COUNTED.has(call.outcome)) times.push(at);
    }
    if (older || !page.nextCursor) return times;
    cursor = page.nextCursor;
  }
}

function childrenOf(grants: readonly Grant[]): Map<string, Grant[]> {
  const children = new Map<string, Grant[]>();
  for (const g of grants) if (g.parentId) children.set(g.parentId, [...(children.get(g.parentId) ?? []), g]);
  for (const kids of children.values()) kids.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return children;
}

/**
 * The tree as a person would rather look at it: each grant with its status, write mode, budget
 * use in its current window and expiry, children indented under their parent, the focus marked.
 */
export function drawTree(tree: GrantTree): string {
  const children = childrenOf(tree.drawn);
  const lines: string[] = [];
  const walk = (grant: Grant, prefix: string, last: boolean, root: boolean) => {
    const branch = root ? '' : last ? '└─ ' : '├─ ';
    const use = tree.use.get(grant.id);
    const budget = `${use?.used ?? '?'}/${grant.budget.calls} per ${grant.budget.windowMs / 1000}s`;
    const mark = grant.id === tree.focus.id ? ' ◀' : '';
    lines.push(`${prefix}${branch}${grant.id}  ${grant.status}  ${grant.writeMode}  ${budget}  expires ${grant.expiresAt}${mark}`);
    const kids = children.get(grant.id) ?? [];
    kids.forEach((kid, i) => walk(kid, root ? '' : `${prefix}${last ? '   ' : '│  '}`, i === kids.length - 1, false));
  };
  walk(tree.drawn[0]!, '', true, true);
  return [...lines, ...tree.gaps.map((gap) => `note: ${gap}`)].join('\n');
}
