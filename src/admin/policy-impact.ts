import { readFile } from 'node:fs/promises';
import { catalogue } from '../kernel/decisions/catalogue';
import { createLogger } from '../kernel/log';
import { PolicyEngine } from '../policy/engine';
import { BundleFileSource, WasmFileSource } from '../policy/sources';
import { UsageError } from './policy-eval';

/**
 * `policy impact`: replays recorded decisions (OPA decision events, as the service logs them or
 * a collector received them) through a candidate bundle, and reports the decisions that would
 * change, grouped by path and by what they would change from and to. Inputs are replayed as
 * logged: masked `args` and `resource` stay masked, so a rule that reads them can only be judged
 * on what the log kept.
 */
export async function policyImpact(options: { candidate: string; logFile: string }) {
  const source = options.candidate.endsWith('.wasm')
    ? new WasmFileSource(options.candidate, false)
    : new BundleFileSource(options.candidate, { keys: { publicKeys: [] }, required: false });
  const engine = new PolicyEngine({ source, log: createLogger('silent'), decisionLog: 'off' });
  if (!(await engine.reload()))
    throw new UsageError(`${options.candidate}: not a loadable bundle or module (${engine.lastFailure?.message})`);

  const changes = new Map<string, { path: string; from: string; to: string; count: number; decisionIds: string[] }>();
  let replayed = 0;
  let skipped = 0;
  for (const line of (await readFile(options.logFile, 'utf8')).split('\n')) {
    const event = parseEvent(line);
    if (!event) continue;
    const decision = catalogue.find((d) => d.entrypoint === event.path);
    if (!decision) {
      skipped += 1;
      continue;
    }
    let now: string;
    try {
      now = verdictOf(engine.evaluate(decision, event.input as never));
    } catch {
      now = 'error';
    }
    replayed += 1;
    const before = verdictOf(event.result);
    if (now === before) continue;
    const key = `${event.path}\u0000${before}\u0000${now}`;
    const change = changes.get(key) ?? { path: event.path, from: before, to: now, count: 0, decisionIds: [] };
    change.count += 1;
    if (change.decisionIds.length < 5) change.decisionIds.push(event.decision_id);
    changes.set(key, change);
  }
  const changed = [...changes.values()].sort((a, b) => b.count - a.count || a.path.localeCompare(b.path));
  return { candidate: engine.revision, replayed, skipped, changed: changed.reduce((sum, c) => sum + c.count, 0), changes: changed };
}

interface LoggedEvent {
  decision_id: string;
  path: string;
  input: object;
  result: unknown;
}

function parseEvent(line: string): LoggedEvent | undefined {
  if (!line.trim().startsWith('{')) return undefined;
  try {
    const event = JSON.parse(line) as Partial<LoggedEvent>;
    if (typeof event.decision_id !== 'string' || typeof event.path !== 'string' || typeof event.input !== 'object' || !event.input)
      return undefined;
    return event as LoggedEvent;
  } catch {
    return undefined;
  }
}

/** `allow`, or `deny` with the reason the decision reports (its first reason otherwise). */
function verdictOf(result: unknown): string {
  const r = (result ?? {}) as { allow?: boolean; reason?: string; reasons?: string[] };
  if (r.allow) return 'allow';
  return `deny: ${r.reason ?? r.reasons?.[0] ?? 'no reason'}`;
}
