import type { Duplex } from 'node:stream';

type Writes = { _write: (...args: unknown[]) => unknown; _writev: (...args: unknown[]) => unknown };

/**
 * Counts the writes the sockets make while `run` runs: `write` for a chunk alone, `writev` for
 * chunks that left together (a corked socket, uncorked). Each socket's own methods come back after.
 */
export async function countWrites<T>(
  sockets: readonly Duplex[],
  run: () => Promise<T>,
): Promise<{ result: T; write: number; writev: number }> {
  const counted = { write: 0, writev: 0 };
  const restore = sockets.map((stream) => {
    const socket = stream as unknown as Writes;
    const { _write: write, _writev: writev } = socket;
    socket._write = function (...args) {
      counted.write += 1;
      return write.apply(this, args);
    };
    socket._writev = function (...args) {
      counted.writev += 1;
      return writev.apply(this, args);
    };
    return () => Object.assign(socket, { _write: write, _writev: writev });
  });
  try {
    return { result: await run(), ...counted };
  } finally {
    for (const undo of restore) undo();
  }
}
