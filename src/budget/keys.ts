/**
 * Redis keys of one grant tree. Every key carries the root id as its hash tag (`{grt_…}`), so the
 * budget script, which touches the whole chain and the tree's version key, runs on one Redis
 * Cluster slot. The client's keyPrefix goes in front and holds no braces (config forbids them).
 */
export function treeVersionKey(rootId: string): string {
  return `{${rootId}}:ver`;
}

export function windowKey(rootId: string, grantId: string): string {
  return `{${rootId}}:win:${grantId}`;
}

/** The tree's session labels: label -> first seen, and `_v`, their stamp. */
export function treeLabelsKey(rootId: string): string {
  return `{${rootId}}:labels`;
}

/** The tree's allowed calls per tool, by bucket: `<tool>|<bucket start>` -> count. */
export function treeCallsKey(rootId: string): string {
  return `{${rootId}}:calls`;
}

/** Every key of a tree's session, which goes with the tree. */
export function treeSessionKeys(rootId: string): string[] {
  return [treeLabelsKey(rootId), treeCallsKey(rootId)];
}
