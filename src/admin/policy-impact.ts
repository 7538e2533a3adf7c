import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { catalogue } from '../kernel/decisions/catalogue';
import { createLogger } from '../kernel/log';
import { PolicyEngine } from '../policy/engine';
import { BundleFileSource, WasmFileSource } from '../policy/sources';
import { UsageError } from './policy-eval';

/**
 * `policy impact`: replays recorded decisions (OPA decision events) through a candidate bundle,
 * and reports the decisions that would change, grouped by path and by what they would change
 * from and to.
 *
 * What it reads (`--log`): a file or a directory of files, each the service's own log (JSON
 * lines; the `decision` lines are the events, others are passed over) or what a collector
 * received from it (gzip JSON arrays, one per batch, as files of their own or concatenated),
 * gzip or not.
 *
 * What it can judge: the input as it was logged. `args` are always masked (`**REDACTED**`), so a
 * rule that reads them is judged as if they were absent. An event whose `masked` or `erased` list
 * names anything else (the org's `system.log.mask` erased `resource`, say) is not replayed at
 * all: the candidate's answer there would depend on a value the log does not have, so it is
 * counted under `notReplayable`, never as a change.
 *
 * What a rule remembers is replayed as each decision saw it: a broker check's logged input holds
 * the tree's `session` (its labels and calls per tool) at that check, so a candidate's session
 * rule is judged on the state the service was in. A check logged before sessions existed saw a
 * tree with no label and no count, which is what it is replayed with.
 *
 * `allowToDeny` and `denyToAllow` count the decisions whose verdict the candidate flips (a change
 * of deny reason is neither); `--max-changes N` makes the command fail past N changed decisions,
 * so a team can gate a rollout in CI.
 */
export async function policyImpact(options: { candidate: string; logFile: string }) {
  const source = options.candidate.endsWith('.wasm')
    ? new WasmFileSource(options.candidate, false)
    : new BundleFileSource(options.candidate, { keys: { publicKeys: [] }, required: false });
  const engine = new PolicyEngine({ source, log: createLogger('silent'), decisionLog: 'off' });
  if (!(await engine.reload()))
    throw new UsageError(`${options.candidate}: not a loadable bundle or module (${engine.lastFailure?.message})`);

  const changes = new Map<string, { path: string; from: string; to: string; count: number; decisionIds: string[] }>();
  const notReplayable = { count: 0, fields: {} as Record<string, number>, decisionIds: [] as string[] };
  let replayed = 0;
  let skipped = 0;
  let allowToDeny = 0;
  let denyToAllow = 0;
  for (const event of await readEvents(options.logFile)) {
    const decision = catalogue.find((d) => d.entrypoint === event.path);
    if (!decision) {
      skipped += 1;
      continue;
    }
    const hidden = hiddenFields(event);
    if (hidden.length > 0) {
      notReplayable.count += 1;
      for (const field of hidden) notReplayable.fields[field] = (notReplayable.fields[field] ?? 0) + 1;
      if (notReplayable.decisionIds.length < 5) notReplayable.decisionIds.push(event.decision_id);
      continue;
    }
    let now: string;
    try {
      now = verdictOf(engine.evaluate(decision, replayInput(event) as never));
    } catch {
      now = 'error';
    }
    replayed += 1;
    const before = verdictOf(event.result);
    if (now === before) continue;
    if (before === 'allow') allowToDeny += 1;
    else if (now === 'allow') denyToAllow += 1;
    const key = `${event.path}\u0000${before}\u0000${now}`;
    const change = changes.get(key) ?? { path: event.path, from: before, to: now, count: 0, decisionIds: [] };
    change.count += 1;
    if (change.decisionIds.length < 5) change.decisionIds.push(event.decision_id);
    changes.set(key, change);
  }
  const changed = [...changes.values()].sort((a, b) => b.count - a.count || a.path.localeCompare(b.path));
  return {
    candidate: engine.revision,
    replayed,
    skipped,
    notReplayable,
    changed: changed.reduce((sum, c) => sum + c.count, 0),
    allowToDeny,
    denyToAllow,
    changes: changed,
  };
}

/** A broker check logged before trees had sessions saw none: it is replayed with an empty one. */
function replayInput(event: LoggedEvent): object {
  if (event.path !== 'broker/check/decision' || 'session' in event.input) return event.input;
  return { ...event.input, session: { labels: {}, calls: {} } };
}

interface LoggedEvent {
  decision_id: string;
  path: string;
  input: object;
  result: unknown;
  masked?: unknown;
  erased?: unknown;
}

/**
 * The masked or erased pointers of an event a replay would need: everything but the tool's
 * `args` (always masked, read by no core rule). A masked `result` counts too: the verdict to
 * compare with is then unknown.
 */
function hiddenFields(event: LoggedEvent): string[] {
  const listed = [event.masked, event.erased].flatMap((list) => (Array.isArray(list) ? list : []));
  const fields = listed.map((pointer) => (typeof pointer === 'string' ? pointer : '(not a pointer)'));
  return [...new Set(fields.filter((pointer) => pointer !== '/input/args' && !pointer.startsWith('/input/args/')))];
}

/** Every decision event of a file, or of every file of a directory (name order). */
async function readEvents(location: string): Promise<LoggedEvent[]> {
  let files: string[];
  try {
    files = (await stat(location)).isDirectory()
      ? (await readdir(location, { withFileTypes: true }))
          .filter((entry) => entry.isFile())
          .map((entry) => path.join(location, entry.name))
          .sort()
      : [location];
  } catch (error) {
    throw new UsageError(`${location}: ${(error as Error).message}`);
  }
  const events: LoggedEvent[] = [];
  for (const file of files) {
    let bytes = await readFile(file);
    // gzip's magic number: a collector's batch as it arrived (several members concatenated too).
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      try {
        bytes = gunzipSync(bytes);
      } catch (error) {
        throw new UsageError(`${file}: not readable gzip (${(error as Error).message})`);
      }
    }
    for (const value of jsonValues(bytes.toString('utf8'))) {
      for (const item of Array.isArray(value) ? value : [value]) {
        const event = asEvent(item);
        if (event) events.push(event);
      }
    }
  }
  return events;
}

/**
 * The JSON objects and arrays of a text, one after another: JSON lines, a pretty-printed array, or
 * arrays written back to back. What is not JSON (a line of another program's output) is passed
 * over up to the end of its line.
 */
function* jsonValues(text: string): Generator<unknown> {
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c !== '{' && c !== '[') {
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n') i += 1;
      else i = nextLine(text, i);
      continue;
    }
    const end = valueEnd(text, i);
    let value: unknown;
    let parsed = false;
    if (end > i) {
      try {
        value = JSON.parse(text.slice(i, end));
        parsed = true;
      } catch {
        // not JSON after all: skip the line
      }
    }
    if (parsed) {
      yield value;
      i = end;
    } else {
      i = nextLine(text, i);
    }
  }
}

function nextLine(text: string, from: number): number {
  const newline = text.indexOf('\n', from);
  return newline < 0 ? text.length : newline + 1;
}

/** The index after the bracket that closes the one at `start` (strings respected), or -1. */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth += 1;
    else if (c === '}' || c === ']') {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function asEvent(value: unknown): LoggedEvent | undefined {
  const event = value as Partial<LoggedEvent> | null;
  if (!event || typeof event !== 'object' || typeof event.decision_id !== 'string' || typeof event.path !== 'string') return undefined;
  if (typeof event.input !== 'object' || !event.input) return undefined;
  return event as LoggedEvent;
}

/** `allow`, or `deny` with the reason the decision reports (its first reason otherwise). */
function verdictOf(result: unknown): string {
  const r = (result ?? {}) as { allow?: boolean; reason?: string; reasons?: string[] };
  if (r.allow) return 'allow';
  return `deny: ${r.reason ?? r.reasons?.[0] ?? 'no reason'}`;
}
