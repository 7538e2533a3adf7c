/**
 * The performance machinery of the service, behind one seam made once by the composition root
 * (src/composition.ts). Each speed-up is a hook or a decorator over a plain interface that the
 * simple code implements too, so the service works, and answers the same, with all of them off:
 *
 *   - frontHandler (./direct-http.ts): the broker check on Node's own HTTP server ahead of Koa;
 *     plain: none, Koa serves every route (http/app.ts, `front`).
 *   - redisBeforeSend (./redis-cork.ts): budget scripts sent together in one write per Redis node;
 *     plain: sendNow (redis/client.ts).
 *   - lineWriter (./log-lines.ts): batches of decision events in one write to the log's stream;
 *     plain: plainLineWriter, one pino call per event (kernel/log.ts).
 *   - jsonMemo, treeInputs, shapeMemo (./memo.ts): the JSON of unchanging policy input, a
 *     check's input members per tree facts, the trail's shape codes; plain: built every time.
 *   - evaluateText (./opa-abi.ts): a decision's input text written into the policy module's
 *     memory and its result read back through OPA's ABI; plain: opa-wasm's `evaluate`.
 *   - checkReads, brokerTokens (./caches.ts): the check's chains, trees, subjects, facts, credential
 *     sources and broker tokens kept per replica; plain: broker/reads.ts, every read every time.
 *   - trailWriter (./group-commit.ts): concurrent checks' records in one statement; plain:
 *     trail/writer.ts, one statement per record.
 *   - singleFlight (./single-flight.ts): one rebuild of a tree's windows for its concurrent checks;
 *     plain: each check rebuilds.
 *   - proofBlocks (./proof-blocks.ts): the leaf hashes of complete blocks of the trail's tree that
 *     proofs went through; plain: trail/tree-store.ts rebuilds every block from its records.
 *   - pendingCalls (./pending-calls.ts): the calls the checks wrote pending and the grants' brokers,
 *     for their outcome batches; plain: NO_PENDING_CALLS, every batch reads them.
 *
 * Each file says what it trades. All are turned off together with SPEEDUPS=off (src/config.ts), to
 * tell a bug of a speed-up from one of the service, or to measure what they give.
 */
import type { BrokerTokenReads, CheckReads } from '../broker/reads';
import { PLAIN_TREE_INPUTS, type TreeInputs } from '../broker/policy-input';
import type { FrontHandlerFactory } from '../http/app';
import { plainLineWriter, type LineWriterFactory } from '../kernel/log';
import { evaluateTextPlainly, type EvaluateText } from '../policy/evaluate-text';
import { NO_JSON_MEMO, type JsonMemo } from '../policy/input-json';
import { sendNow, type BeforeSendFactory } from '../redis/client';
import { NO_PENDING_CALLS, type PendingCalls } from '../trail/pending-calls';
import type { ShapeMemo } from '../trail/shape-memo';
import type { BlockCache } from '../trail/tree-store';
import { plainTrailWriter, type TrailWriter, type WriteRecords } from '../trail/writer';
import { cachedBrokerTokens, cachedCheckReads, type CheckBudget } from './caches';
import { directRoutes } from './direct-http';
import { GroupCommit } from './group-commit';
import { jsonLineWriter } from './log-lines';
import { createJsonMemo, createShapeMemo, createTreeInputMemo } from './memo';
import { evaluateTextThroughAbi } from './opa-abi';
import { redisCork } from './redis-cork';
import { pendingCalls } from './pending-calls';
import { proofBlocks } from './proof-blocks';
import { singleFlight } from './single-flight';

export interface SpeedUpOptions {
  enabled: boolean;
}

export interface SpeedUps {
  readonly enabled: boolean;
  /** The speed-ups this service runs, by name (none with SPEEDUPS=off). */
  readonly inUse: readonly string[];
  /** For createApp (`front`): what serves some requests ahead of Koa. */
  readonly frontHandler: FrontHandlerFactory;
  /** For connectRedis: what the budget calls before it sends its script. */
  readonly redisBeforeSend: BeforeSendFactory;
  /** For the decision log: how batches of events become log lines. */
  readonly lineWriter: LineWriterFactory;
  /** For a policy engine: a memo of its own. */
  jsonMemo(): JsonMemo;
  /** For a policy engine: how its module evaluates an input's text. */
  readonly evaluateText: EvaluateText;
  /** For the broker check: the input members of each tree's facts. */
  treeInputs(): TreeInputs;
  /** For the call trail's writes: the shape codes seen committed. */
  shapeMemo(): ShapeMemo | undefined;
  /** For the broker check: its reads, and its budget as they observe it. */
  checkReads(plain: CheckReads, budget: CheckBudget, options: { factMaxAgeMs: number }): { reads: CheckReads; budget: CheckBudget };
  /** For the broker check's authenticator: how a `bkt_` token's broker is found. */
  brokerTokens(plain: BrokerTokenReads, maxAgeMs: number): BrokerTokenReads;
  /** For the broker check: how its records reach the trail. */
  trailWriter(insert: WriteRecords): TrailWriter;
  /** For a run that concurrent callers may share (a tree's rebuild). */
  singleFlight<K, V>(run: (key: K) => Promise<V>): (key: K) => Promise<V>;
  /** For the trail's proofs: the complete blocks of the tree they went through. */
  proofBlocks(): BlockCache | undefined;
  /** For the trail's writer and its outcome batches: what the checks wrote pending. */
  pendingCalls(): PendingCalls;
}

const PLAIN: SpeedUps = {
  enabled: false,
  inUse: [],
  frontHandler: () => () => false,
  redisBeforeSend: () => sendNow,
  lineWriter: plainLineWriter,
  jsonMemo: () => NO_JSON_MEMO,
  evaluateText: evaluateTextPlainly,
  treeInputs: () => PLAIN_TREE_INPUTS,
  shapeMemo: () => undefined,
  checkReads: (reads, budget) => ({ reads, budget }),
  brokerTokens: (plain) => plain,
  trailWriter: plainTrailWriter,
  singleFlight: (run) => run,
  proofBlocks: () => undefined,
  pendingCalls: () => NO_PENDING_CALLS,
};

const FAST: SpeedUps = {
  enabled: true,
  inUse: [
    'direct-http',
    'redis-cork',
    'log-lines',
    'memo',
    'opa-abi',
    'caches',
    'group-commit',
    'single-flight',
    'proof-blocks',
    'pending-calls',
  ],
  frontHandler: directRoutes,
  redisBeforeSend: redisCork,
  lineWriter: jsonLineWriter,
  jsonMemo: createJsonMemo,
  evaluateText: evaluateTextThroughAbi,
  treeInputs: createTreeInputMemo,
  shapeMemo: createShapeMemo,
  checkReads: cachedCheckReads,
  brokerTokens: cachedBrokerTokens,
  trailWriter: (insert) => new GroupCommit(insert),
  singleFlight,
  proofBlocks: () => proofBlocks(),
  pendingCalls: () => pendingCalls(),
};

export function createSpeedUps(options: SpeedUpOptions): SpeedUps {
  return options.enabled ? FAST : PLAIN;
}
