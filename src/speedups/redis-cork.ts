/**
 * Speed-up: the budget scripts sent in one run of this process's code (a callback and the
 * promise reactions it sets off) leave in one write per Redis node.
 *
 * Trades: reaching into ioredis (a connection's `status` and `stream`, a Cluster's master nodes)
 * for one system call for every script sent together instead of one each. The sockets are
 * uncorked as soon as that code has run, not at the end of the event loop's turn: held that long,
 * a check's script waited behind every other callback of the turn (under load, the larger part of
 * the charge's time, and all of its tail when the turn held a GC pause) before Redis even saw it,
 * where sent at once Redis answers while this process does the rest of the turn. The price: checks
 * that arrive in separate callbacks (separate requests) get a write each, the system call the
 * turn-long hold saved them under full load. ioredis's own auto-pipelining would batch too, but its
 * pipelines keep every waiting check alive until a full GC (src/redis/client.ts).
 *
 * Off (SPEEDUPS=off): redis/client.ts's sendNow, each command written as it is sent.
 */
import { Redis, type Cluster } from 'ioredis';
import type { BeforeSend } from '../redis/client';

/**
 * The hook: the first send corks the sockets (a Cluster's masters' too), the sends of the same run
 * of code add theirs, and a microtask queued behind them uncorks the sockets once it has ended.
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
    queueMicrotask(() => {
      corked = false;
      for (const socket of sockets) socket.uncork();
    });
  };
}
