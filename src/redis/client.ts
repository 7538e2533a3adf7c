import { Cluster, Redis, type Command } from 'ioredis';
import type { Logger } from '../kernel/log';

/**
 * The Redis the service keeps budgets, version keys and rate limits in: one server
 * (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). Everything above takes
 * either: every multi-key command (the budget scripts, a refund) names keys of one grant tree,
 * which share its `{rootId}` hash tag and so one slot; everything else is single-key.
 */
export type RedisClient = (Redis | Cluster) & SendHook;

/**
 * What the hot path calls just before it sends commands (the budget script of a check). The plain
 * client sends each command as it comes (sendNow); a hook may hold back commands sent together so
 * that they leave in one write (src/speedups/redis-cork.ts).
 */
export type BeforeSend = () => void;
export type BeforeSendFactory = (redis: Redis | Cluster) => BeforeSend;

export interface SendHook {
  readonly beforeSend?: BeforeSend;
}

export const sendNow: BeforeSend = () => undefined;

/** `redis` with the hook its hot path calls before sending. */
export function withBeforeSend<C extends Redis | Cluster>(redis: C, hook: BeforeSendFactory): C & SendHook {
  return Object.assign(redis, { beforeSend: hook(redis) });
}

export interface RedisSettings {
  url: string;
  clusterNodes?: readonly string[];
  keyPrefix: string;
  commandTimeoutMs: number;
}

export function connectRedis(settings: RedisSettings, log: Logger, beforeSend: BeforeSendFactory = () => sendNow): RedisClient {
  // Fail fast while Redis is away: callers answer 503 instead of queueing requests.
  // No auto-pipelining: it saves a write per check under full load, but each of its pipelines
  // defines a `length` getter on itself, and an object with a getter of its own survives every
  // young-generation GC until a full one, with all it reaches: the commands, their promises and
  // the waiting checks, so a scavenge copies far more and pauses the service longer. The
  // beforeSend hook batches writes without that (src/speedups/redis-cork.ts).
  const common = { keyPrefix: settings.keyPrefix, enableOfflineQueue: false, lazyConnect: true, enableAutoPipelining: false };
  // A socket told to close that has not within a command's timeout is destroyed: a Redis that slow
  // counts as away. ioredis's default (2 s) also held a closed service's process that long when
  // Redis was away: between reconnect attempts its disconnect ends a socket already closed, whose
  // 'close' never comes to clear the timer (redis/ioredis#1247).
  // ioredis's own command timeout is only a backstop, for the commands the service's deadline
  // (DeadlineRedis, DeadlineCluster below) does not see: those a Cluster's node connections and
  // its slot refreshes send themselves. Its timer rejects as soon as it runs, in the timers phase,
  // before the poll phase reads a reply already waiting in the socket: at REDIS_COMMAND_TIMEOUT_MS,
  // a stall of this process past the timeout (a long GC, a starved CPU) failed commands Redis had
  // answered in time. Set well past the deadline, it fires first only when this process stalls
  // several times longer than Redis is allowed to take.
  const perNode = {
    commandTimeout: settings.commandTimeoutMs * BACKSTOP_FACTOR,
    disconnectTimeout: settings.commandTimeoutMs,
    maxRetriesPerRequest: 1,
  };
  const redis = settings.clusterNodes?.length
    ? new DeadlineCluster(settings.clusterNodes.map(parseNode), {
        ...common,
        redisOptions: perNode,
        // A moved or failed-over slot is followed, but a node that is down fails the command
        // (and so the check: 503) instead of being retried until the request times out.
        maxRedirections: 4,
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        clusterRetryStrategy: (times) => Math.min(times * 100, 2000),
      })
    : new DeadlineRedis(settings.url, { ...common, ...perNode });
  redis.deadlineMs = settings.commandTimeoutMs;
  redis.on('error', (err: Error) => log.warn({ err: { message: err.message } }, 'redis error'));
  return withBeforeSend(redis, beforeSend);
}

function parseNode(node: string): { host: string; port: number } {
  const url = new URL(node.includes('://') ? node : `redis://${node}`);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

/** How many command timeouts ioredis's own timer waits (see connectRedis). */
const BACKSTOP_FACTOR = 4;

type SendStream = Parameters<Redis['sendCommand']>[1];

/** A server connection whose commands fail after `deadlineMs` without an answer (withDeadline). */
class DeadlineRedis extends Redis {
  /** Set once constructed; none (0) until then. */
  deadlineMs = 0;

  override sendCommand(command: Command, stream?: SendStream): unknown {
    const sent = super.sendCommand(command, stream);
    withDeadline(command, this.deadlineMs);
    return sent;
  }
}

/**
 * A Cluster whose commands fail after `deadlineMs` without an answer (withDeadline), however many
 * redirections they follow: the deadline runs from the first send.
 */
class DeadlineCluster extends Cluster {
  /** Set once constructed; none (0) until then. */
  deadlineMs = 0;

  override sendCommand(command: Command, stream?: SendStream, node?: unknown): unknown {
    const sent = super.sendCommand(command, stream, node);
    withDeadline(command, this.deadlineMs);
    return sent;
  }
}

/**
 * Fails `command` ("Command timed out", as ioredis's own timeout does) if its answer has not come
 * `ms` after it was written. The clock starts when the turn of the event loop that sent it ends
 * (armDeadlines), not at the send: a command sent into a corked socket (src/speedups/redis-cork.ts)
 * is written at the turn's end, and a stall of this process before that must not count as Redis's
 * time. A timer that comes due runs before this process reads its sockets, and when the process
 * itself was stalled past the deadline the answer may be waiting there unread: so the command is
 * failed only after the event loop has read its sockets once more (setImmediate runs after that
 * poll), and only if the answer was not among what it read. An answer that comes after the
 * command failed is read and dropped by ioredis, as after its own timeout: the commands behind it
 * still get theirs.
 */
function withDeadline(command: Command, ms: number): void {
  if (command.isSettled || !(ms > 0)) return;
  if (unarmed.length === 0) setImmediate(armDeadlines);
  unarmed.push(command);
  unarmedMs.push(ms);
}

/** The commands sent in this turn of the event loop, and their deadlines: armed when it ends. */
let unarmed: Command[] = [];
let unarmedMs: number[] = [];

function armDeadlines(): void {
  const commands = unarmed;
  const deadlines = unarmedMs;
  unarmed = [];
  unarmedMs = [];
  for (let i = 0; i < commands.length; i += 1) arm(commands[i]!, deadlines[i]!);
}

function arm(command: Command, ms: number): void {
  if (command.isSettled) return;
  const timer = setTimeout(failAfterNextRead, ms, command);
  const clear = (): void => clearTimeout(timer);
  command.promise.then(clear, clear);
}

function failAfterNextRead(command: Command): void {
  if (!command.isSettled) setImmediate(failIfUnanswered, command);
}

function failIfUnanswered(command: Command): void {
  if (!command.isSettled) command.reject(new Error('Command timed out'));
}
