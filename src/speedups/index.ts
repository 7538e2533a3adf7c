/**
 * The performance machinery of the service, behind one seam made once by the composition root
 * (src/composition.ts). Each speed-up is a hook or a decorator over a plain interface that the
 * simple code implements too, so the service works, and answers the same, with all of them off:
 *
 *   - frontHandler (./direct-http.ts): the broker check on Node's own HTTP server ahead of Koa;
 *     plain: none, Koa serves every route (http/app.ts, `front`).
 *   - redisBeforeSend (./redis-cork.ts): a turn's budget scripts in one write per Redis node;
 *     plain: sendNow (budget/redis-client.ts).
 *   - lineWriter (./log-lines.ts): batches of decision events in one write to the log's stream;
 *     plain: plainLineWriter, one pino call per event (kernel/log.ts).
 *   - jsonMemo (./memo.ts): the JSON of inputs' unchanging members kept per policy engine;
 *     plain: NO_JSON_MEMO (policy/input-json.ts).
 *
 * Each file says what it trades. All are turned off together with SPEEDUPS=off (src/config.ts), to
 * tell a bug of a speed-up from one of the service, or to measure what they give.
 */
import { sendNow, type BeforeSendFactory } from '../budget/redis-client';
import type { FrontHandlerFactory } from '../http/app';
import { plainLineWriter, type LineWriterFactory } from '../kernel/log';
import { NO_JSON_MEMO, type JsonMemo } from '../policy/input-json';
import { directRoutes } from './direct-http';
import { jsonLineWriter } from './log-lines';
import { createJsonMemo } from './memo';
import { redisCork } from './redis-cork';

export interface SpeedUpOptions {
  enabled: boolean;
}

export interface SpeedUps {
  readonly enabled: boolean;
  /** For createApp (`front`): what serves some requests ahead of Koa. */
  readonly frontHandler: FrontHandlerFactory;
  /** For connectRedis: what the budget calls before it sends its script. */
  readonly redisBeforeSend: BeforeSendFactory;
  /** For the decision log: how batches of events become log lines. */
  readonly lineWriter: LineWriterFactory;
  /** For a policy engine: a memo of its own. */
  jsonMemo(): JsonMemo;
}

const PLAIN: SpeedUps = {
  enabled: false,
  frontHandler: () => () => false,
  redisBeforeSend: () => sendNow,
  lineWriter: plainLineWriter,
  jsonMemo: () => NO_JSON_MEMO,
};

const FAST: SpeedUps = {
  enabled: true,
  frontHandler: directRoutes,
  redisBeforeSend: redisCork,
  lineWriter: jsonLineWriter,
  jsonMemo: createJsonMemo,
};

export function createSpeedUps(options: SpeedUpOptions): SpeedUps {
  return options.enabled ? FAST : PLAIN;
}
