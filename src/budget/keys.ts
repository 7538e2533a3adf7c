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
