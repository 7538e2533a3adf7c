import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type LineWriterFactory } from '../../src/kernel/log';
import { PolicyEngine, PolicyUnavailableError, type DecisionLogMode } from '../../src/policy/engine';
import { DecisionLog } from '../../src/policy/decision-log';
import { jsonLineWriter } from '../../src/speedups/log-lines';
import { catalogue, decisions, defineDecision, verdict, type DecisionDefinition } from '../../src/kernel/decisions/catalogue';
import { z } from '../../src/kernel/schema';
import { decisionsWritten, startService } from '../support/service';
import { human, podWith } from '../support/world';

/**
 * The policy engine (issue 2, item 2): evaluation by entrypoint, the revision, hot reload that
 * refuses a broken module and keeps the old one, and the decision log.
 */
const root = path.resolve(__dirname, '../..');
const SERVICE_MODULE = path.join(root, 'build/policy/policy.wasm');
const POD_READ_BY_OWNER = { action: 'pod.read', caller: { kind: 'human' as const, role: 'owner' as const }, pod: { owner_count: null } };
/** The one decision of the tiny test modules. */
const tiny = defineDecision('tiny', 'a test module', z.object({}), verdict({}));

let work: string;
/** Two small modules with the same entrypoint and different rules, built by the pinned opa. */
let allowAll: Buffer;
let denyAll: Buffer;

function buildModule(rego: string): Buffer {
  const dir = mkdtempSync(path.join(work, 'build-'));
  writeFileSync(path.join(dir, 'tiny.rego'), rego);
  execFileSync(path.join(root, '.tools/bin/opa'), [
    'build',
    '-t',
    'wasm',
    '-e',
    'tiny/decision',
    '-o',
    path.join(dir, 'bundle.tar.gz'),
    path.join(dir, 'tiny.rego'),
  ]);
  execFileSync('tar', ['-xzf', path.join(dir, 'bundle.tar.gz'), '-C', dir, '/policy.wasm'], { stdio: 'ignore' });
  return readFileSync(path.join(dir, 'policy.wasm'));
}

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const writes = { count: 0 };
  const sink = new Writable({
    write(chunk, _encoding, done) {
      writes.count += 1;
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger('info', sink), lines, writes };
}

/** Writes a module the way scripts/build-policy.mjs does: a staged file renamed over the old. */
function install(file: string, bytes: Buffer): void {
  writeFileSync(`${file}.staged`, bytes);
  renameSync(`${file}.staged`, file);
}

function engineOn(
  bytes: Buffer,
  options: { mode?: DecisionLogMode; required?: readonly DecisionDefinition[]; lineWriter?: LineWriterFactory } = {},
) {
  const file = path.join(mkdtempSync(path.join(work, 'engine-')), 'policy.wasm');
  writeFileSync(file, bytes);
  const { log, lines, writes } = capturingLogger();
  const engine = new PolicyEngine({
    path: file,
    log,
    decisionLog: options.mode ?? 'all',
    required: options.required ?? [],
    pollMs: 50,
    lineWriter: options.lineWriter,
  });
  return { engine, file, lines, writes };
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'policy-engine-test-'));
  allowAll = buildModule('package tiny\n\ndecision := {"allow": true, "reasons": []}\n');
  denyAll = buildModule('package tiny\n\ndecision := {"allow": false, "reasons": ["not_found"]}\n');
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('loading and evaluating', () => {
  it("loads the service's module with every required entrypoint; the revision is the module's sha256", async () => {
    const { engine } = engineOn(readFileSync(SERVICE_MODULE), { required: catalogue });
    expect(await engine.reload()).toBe(true);
    expect(engine.ready).toBe(true);
    expect(engine.revision).toBe(sha256(readFileSync(SERVICE_MODULE)));
    expect(engine.entrypoints).toEqual(expect.arrayContaining(catalogue.map((decision) => decision.entrypoint)));
    expect(engine.evaluate(decisions.podsAccess, POD_READ_BY_OWNER)).toEqual({ allow: true, reasons: [], decisionId: expect.any(String) });
    expect(engine.evaluate(decisions.podsAccess, { ...POD_READ_BY_OWNER, caller: { kind: 'human', role: null } })).toEqual({
      allow: false,
      reasons: ['not_found'],
      decisionId: expect.any(String),
    });
  });

  it('refuses a module lacking a required entrypoint: nothing is loaded and evaluation fails closed', async () => {
    const { engine, lines } = engineOn(allowAll, { required: [tiny, decisions.podsAccess] });
    expect(await engine.reload()).toBe(false);
    expect(engine.ready).toBe(false);
    expect(engine.revision).toBeUndefined();
    expect(() => engine.evaluate(tiny, {})).toThrow(PolicyUnavailableError);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, msg: expect.stringContaining('policy module refused') }));
    expect(JSON.stringify(lines)).toContain('pods/access/decision');
  });

  it('fails closed on an entrypoint the module does not have', async () => {
    const { engine } = engineOn(allowAll);
    await engine.reload();
    expect(() => engine.evaluate(decisions.grantsCreate, {} as never)).toThrow(PolicyUnavailableError);
  });

  it('exposes the size of the WASM memory', async () => {
    const { engine } = engineOn(allowAll);
    expect(engine.wasmMemoryBytes).toBeUndefined();
    await engine.reload();
    expect(engine.wasmMemoryBytes).toBeGreaterThan(0);
    expect(engine.wasmMemoryBytes! % 65536).toBe(0);
  });
});

describe('hot reload', () => {
  it('refuses garbage, keeps serving the old revision, and logs an error', async () => {
    const { engine, file, lines } = engineOn(readFileSync(SERVICE_MODULE), { required: catalogue });
    await engine.reload();
    const before = engine.revision;
    install(file, Buffer.from('\0asm definitely not a policy module'));
    expect(await engine.reload()).toBe(false);
    expect(engine.revision).toBe(before);
    expect(engine.evaluate(decisions.podsAccess, POD_READ_BY_OWNER)).toEqual({ allow: true, reasons: [], decisionId: expect.any(String) });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 50, keptRevision: before, msg: expect.stringContaining('policy module refused') }),
    );
  });

  it('refuses an empty file the same way', async () => {
    const { engine, file } = engineOn(allowAll);
    await engine.reload();
    install(file, Buffer.alloc(0));
    expect(await engine.reload()).toBe(false);
    expect(engine.evaluate(tiny, {})).toEqual({ allow: true, reasons: [], decisionId: expect.any(String) });
  });

  it('keeps the revision when the same bytes are written again', async () => {
    const { engine, file } = engineOn(allowAll);
    await engine.reload();
    const before = engine.revision;
    install(file, allowAll);
    expect(await engine.reload()).toBe(true);
    expect(engine.revision).toBe(before);
  });

  it('swaps in a module built differently: new revision, new rules', async () => {
    const { engine, file, lines } = engineOn(allowAll);
    await engine.reload();
    expect(engine.evaluate(tiny, {}).allow).toBe(true);
    install(file, denyAll);
    expect(await engine.reload()).toBe(true);
    expect(engine.revision).toBe(sha256(denyAll));
    expect(engine.evaluate(tiny, {})).toEqual({ allow: false, reasons: ['not_found'], decisionId: expect.any(String) });
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'policy loaded', revision: sha256(denyAll), previous: sha256(allowAll) }));
  });

  it('refuses a rebuilt module that drops an entrypoint the running one serves', async () => {
    const { engine, file } = engineOn(readFileSync(SERVICE_MODULE));
    await engine.reload();
    const before = engine.revision;
    install(file, allowAll);
    expect(await engine.reload()).toBe(false);
    expect(engine.revision).toBe(before);
    expect(engine.evaluate(decisions.podsAccess, POD_READ_BY_OWNER).allow).toBe(true);
  });

  it('picks up a rebuilt module by itself while watching the file', async () => {
    const { engine, file } = engineOn(allowAll);
    await engine.reload();
    engine.watch();
    try {
      install(file, denyAll);
      const deadline = Date.now() + 5000;
      while (engine.revision !== sha256(denyAll) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(engine.revision).toBe(sha256(denyAll));
    } finally {
      engine.close();
    }
  });
});

describe('decision log', () => {
  const input = { action: 'pod.read', caller: { kind: 'human' as const, role: null } };

  it("logs OPA's decision event: decision_id, path, input, result, timestamp, bundles, labels, metrics", async () => {
    const { engine, lines } = engineOn(readFileSync(SERVICE_MODULE));
    await engine.reload();
    const first = engine.evaluate(decisions.podsAccess, input);
    engine.evaluate(decisions.podsAccess, input);
    expect(lines.filter((line) => line.msg === 'decision')).toHaveLength(0); // written after the answer
    await decisionsWritten();
    const logged = lines.filter((line) => line.msg === 'decision');
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({
      decision_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      path: 'pods/access/decision',
      input,
      result: { allow: false, reasons: ['not_found'] },
      bundles: { policy: { revision: engine.revision } },
      labels: { id: expect.any(String), version: expect.any(String) },
      metrics: { timer_rego_query_eval_ns: expect.any(Number) },
      timestamp: expect.any(String),
    });
    expect(logged[0]!.decision_id).not.toBe(logged[1]!.decision_id);
    // The caller gets the id its decision was logged under (the broker records it as approvalId).
    expect(first.decisionId).toBe(logged[0]!.decision_id);
  });

  it('writes the decisions of the same few milliseconds in one write, not one each', async () => {
    const { engine, lines, writes } = engineOn(readFileSync(SERVICE_MODULE), { lineWriter: jsonLineWriter });
    await engine.reload();
    const before = writes.count;
    engine.evaluate(decisions.podsAccess, input);
    await new Promise((resolve) => setImmediate(resolve)); // another turn of the event loop: another request
    engine.evaluate(decisions.podsAccess, input);
    expect(lines.filter((line) => line.msg === 'decision')).toHaveLength(0);
    await decisionsWritten();
    expect(lines.filter((line) => line.msg === 'decision')).toHaveLength(2);
    expect(writes.count - before).toBe(1);
  });

  it('logs only denials in deny mode and nothing when off', async () => {
    const deny = engineOn(readFileSync(SERVICE_MODULE), { mode: 'deny' });
    await deny.engine.reload();
    deny.engine.evaluate(decisions.podsAccess, POD_READ_BY_OWNER);
    deny.engine.evaluate(decisions.podsAccess, input);
    await decisionsWritten();
    expect(deny.lines.filter((line) => line.msg === 'decision').map((line) => (line.result as { allow: boolean }).allow)).toEqual([false]);

    const off = engineOn(readFileSync(SERVICE_MODULE), { mode: 'off' });
    await off.engine.reload();
    off.engine.evaluate(decisions.podsAccess, input);
    await decisionsWritten();
    expect(off.lines.filter((line) => line.msg === 'decision')).toEqual([]);
  });

  it('logs every denial and, in sampled mode, the allows whose draw falls under the rate', async () => {
    const { log, lines } = capturingLogger();
    // One draw per allowed decision, none for a denial; 0.1 itself is not under a rate of 0.1.
    const draws = [0.05, 0.5, 0.0999, 0.1, 0.95];
    const decisionLog = new DecisionLog({ mode: 'sampled', sampleRate: 0.1, random: () => draws.shift() ?? 1, log, version: 'test' });
    const file = path.join(mkdtempSync(path.join(work, 'sampled-')), 'policy.wasm');
    writeFileSync(file, readFileSync(SERVICE_MODULE));
    const engine = new PolicyEngine({ path: file, log, decisionLog });
    await engine.reload();
    const allowed = Array.from({ length: 5 }, () => engine.evaluate(decisions.podsAccess, POD_READ_BY_OWNER).decisionId);
    const denied = engine.evaluate(decisions.podsAccess, input).decisionId;
    await decisionsWritten();
    const logged = lines.filter((line) => line.msg === 'decision').map((line) => line.decision_id);
    expect(logged).toEqual([allowed[0], allowed[2], denied]);
    expect(draws).toEqual([]);
  });
});

describe('the service without a usable policy module', () => {
  it('is not ready and fails closed: 503 dependency_unavailable where a decision is needed', async () => {
    const broken = path.join(work, 'broken.wasm');
    writeFileSync(broken, 'not a module');
    const service = await startService({ POLICY_WASM_PATH: broken });
    try {
      const ready = await service.http.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ status: 'unavailable', checks: { policy: false }, policyRevision: null });
      const owner = human(service, 'owner');
      const podId = await podWith(service, owner);
      const read = await service.http.get(`/api/pods/${podId}`).set(owner.auth);
      expect({ status: read.status, code: read.body.code }).toEqual({ status: 503, code: 'dependency_unavailable' });
      const add = await service.http.post(`/api/pods/${podId}/members`).set(owner.auth).send({ userId: 'someone', role: 'owner' });
      expect(add.status).toBe(503);
    } finally {
      await service.close();
    }
  });
});
