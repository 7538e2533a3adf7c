import { MASK, type MaskOp } from './decision-log';

/**
 * A call's arguments as a human may read them: each value that the policy's mask rule
 * (system.log.mask, asked through PolicyEngine.maskOf) names under `/input/args` reads
 * `**REDACTED**`, whether the rule erases it or puts a value of its own there, so the reader sees
 * that something was withheld and never what. Nothing is added where the arguments have no
 * value; a rule naming `/input/args` itself withholds them all. The arguments given are not
 * changed: the result is a copy.
 */
export function maskArgs(args: Record<string, unknown>, ops: readonly MaskOp[]): unknown {
  let masked: unknown = structuredClone(args);
  for (const op of ops) {
    const parts = pointerParts(typeof op === 'string' ? op : op.path);
    if (parts[0] !== 'input' || parts[1] !== 'args') continue;
    const rest = parts.slice(2);
    if (rest.length === 0) {
      masked = MASK;
      continue;
    }
    const parent = rest.slice(0, -1).reduce<unknown>((node, key) => childOf(node, key), masked);
    const key = rest.at(-1)!;
    if (childOf(parent, key) !== undefined) (parent as Record<string, unknown>)[key] = MASK;
  }
  return masked;
}

/** RFC 6901: `/a~1b/c` is ["a/b", "c"]. */
function pointerParts(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function childOf(node: unknown, key: string): unknown {
  if (Array.isArray(node)) return /^(0|[1-9][0-9]*)$/.test(key) ? (node[Number(key)] as unknown) : undefined;
  if (node && typeof node === 'object' && Object.hasOwn(node, key)) return (node as Record<string, unknown>)[key];
  return undefined;
}
