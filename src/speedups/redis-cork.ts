/**
 * Speed-up: the budget scripts sent in one run of this process's code (a callback and the
 * promise reactions it sets off) leave in one write per Redis node; under load, those of the
 * whole turn of the event loop do.
 *
 * Trades: reaching into ioredis (a connection's `status`, `stream` and `commandQueue`, a
 * Cluster's master nodes) for one system call for every script sent together instead of one each.
 * With nothing of this process awaiting Redis's answer, the sockets are uncorked as soon as the
 * code that sent the script has run: held to the end of the event loop's turn, a check's script
 * waited behind every other callback of the turn before Redis even saw it, where sent at once
 * Redis answers while this process does the rest of its turn. With commands still unanswered on
 * a node (the process is under load: checks arrive faster than a round trip), the sockets stay
 * corked to the end of the turn (setImmediate), so the scripts of the turn's other requests, each
 * its own callback, share the write: under full load a write per check was a large share of a check's
 * CPU. The price there: a script leaves after the rest of its turn, whose answers this process
 * could not read before that turn ended anyway. ioredis's own auto-pipelining would batch too,
 * but its pipelines keep every waiting check alive until a full GC (src/redis/client.ts).
 *
 * Off (SPEEDUPS=off): redis/client.ts's sendNow, each command written as it is sent.
 */
import { Redis, type Cluster } from 'ioredis';
import type { BeforeSend } from '../redis/client';

/**
 * The hook: the first send corks the sockets (a Cluster's masters' too), the sends of the same run
 * of code add theirs, and a microtask queued behind them uncorks the sockets once it has ended;
 * with commands awaiting answers, the turn's end (setImmediate) does, and later callbacks'
 * sends of the turn add theirs too.
 */
export function redisCork(redis: Redis | Cluster): BeforeSend {
  const connections = (): Redis[] => (redis instanceof Redis ? [redis] : redis.nodes('master'));
  let corked = false;
  return () => {
    if (corked) return;
    const nodes = connections().filter((node) => node.status === 'ready');
    if (nodes.length === 0) return;
    const sockets = nodes.map((node) => node.stream);
    for (const socket of sockets) socket.cork();
    corked = true;
    const uncork = () => {
      corked = false;
      for (const socket of sockets) socket.uncork();
    };
    if (nodes.some((node) => awaitingAnswers(node) > 0)) setImmediate(uncork);
    else queueMicrotask(uncork);
  };
}

/** Commands written to the node and not answered yet (ioredis's queue of them; 0 if it has none). */
function awaitingAnswers(node: Redis): number {
  const queue = (node as unknown as { commandQueue?: { length?: unknown } }).commandQueue;
  return typeof queue?.length === 'number' ? queue.length : 0;
}
