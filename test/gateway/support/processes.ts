import { readdirSync, readFileSync } from 'node:fs';

/**
 * Processes as Linux's /proc shows them: the tree below a process (the gateway, npx's shell, the
 * upstream it started), and whether a process is gone. A zombie (exited, not yet reaped by a
 * parent that may itself be gone) counts as gone: it holds no memory, file or token.
 */
function stat(pid: number): { ppid: number; state: string } | undefined {
  try {
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Every live process below `root` (not `root` itself). */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = stat(Number(entry));
    if (!info || info.state === 'Z') continue;
    children.set(info.ppid, [...(children.get(info.ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const walk = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(root);
  return found;
}

export function alive(pid: number): boolean {
  const info = stat(pid);
  return info !== undefined && info.state !== 'Z';
}

/** Milliseconds until none of `pids` is alive (from `since`), or Infinity after `withinMs`. */
export async function goneAfter(pids: number[], since: number, withinMs = 10_000): Promise<number> {
  while (Date.now() - since < withinMs) {
    if (!pids.some(alive)) return Date.now() - since;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Infinity;
}
