/**
 * Speed-up: the budget scripts of one turn of the event loop leave in one write per Redis node.
 *
 * Trades: reaching into ioredis (a connection's `status` and `stream`, a Cluster's master nodes)
 * and a hold of the commands until the turn's other I/O callbacks have run, for one system call
 * for many checks under load instead of one each. A check alone in its turn is sent as soon as the
 * turn ends. ioredis's own auto-pipelining would batch too, but its pipelines keep every waiting
 * check alive until a full GC (src/redis/client.ts).
 *
 * Off (SPEEDUPS=off): redis/client.ts's sendNow, each command written as it is sent.
 */
import { Redis, type Cluster } from 'ioredis';
import type { BeforeSend } from '../redis/client';

/**
 * The hook: the first send of a turn corks the sockets (a Cluster's masters' too) and the rest of
 * the turn's I/O callbacks add theirs; setImmediate, once they have run, uncorks them.
 */
export function redisCork(redis: Redis | Cluster): BeforeSend {
  const connections = (): Redis[] => (redis instanceof Redis ? [redis] : redis.nodes('master'));
  let corked = false;
  return () => {
    if (corked) return;
    const sockets = connections()
      .filter((node) => node.status === 'ready')
      .map((node) => node.stream);
    if (sockets.length === 0) return;
    for (const socket of sockets) socket.cork();
    corked = true;
    setImmediate(() => {
      corked = false;
      for (const socket of sockets) socket.uncork();
    });
  };
}
