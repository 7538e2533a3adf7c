import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLogger } from '../src/kernel/log';
import { decisions, type DecisionDefinition, type DecisionInput } from '../src/kernel/decisions/catalogue';
import { PolicyEngine } from '../src/policy/engine';

/**
 * The memory soak the foundation issue asks for: npm-opa-wasm issue 143 reports WASM memory that
 * grows with every evaluate(). This runs the service's own PolicyEngine (decision log off) for a
 * million evaluations of a realistic entrypoint with varying inputs and checks that, after a
 * warm-up, neither the module's linear memory nor the process's RSS keeps growing.
 *
 * `npm run soak:policy` (SOAK_EVALUATIONS, SOAK_SAMPLE_EVERY, POLICY_WASM_PATH override defaults).
 */
export interface SoakOptions {
  wasmPath: string;
  evaluations: number;
  sampleEvery: number;
  /** Growth is measured from the first sample taken at or after this many evaluations. */
  warmup: number;
  wasmToleranceBytes: number;
  rssToleranceBytes: number;
}

export interface SoakSample {
  evaluations: number;
  rssBytes: number;
  heapUsedBytes: number;
  wasmBytes: number;
}

export interface SoakReport {
  entrypoint: string;
  /** How the evaluations came out, by `allow`/first reason: proof the inputs vary the decision. */
  outcomes: Record<string, number>;
  revision: string;
  samples: SoakSample[];
  wasmGrowthBytes: number;
  rssGrowthBytes: number;
  flat: boolean;
  elapsedMs: number;
  options: SoakOptions;
}

const MiB = 1024 * 1024;
const WASM_PAGE = 64 * 1024;

export const DEFAULT_SOAK: SoakOptions = {
  wasmPath: 'build/policy/policy.wasm',
  evaluations: 1_000_000,
  sampleEvery: 100_000,
  warmup: 100_000,
  wasmToleranceBytes: WASM_PAGE,
  rssToleranceBytes: 16 * MiB,
};

const POD_ACTIONS = ['pod.read', 'members.list', 'members.add', 'members.remove', 'agents.install', 'tokens.create', 'runtime.stop'];
const ROLES = ['owner', 'admin', 'member', null] as const;

/**
 * Inputs shaped like the ones src/pods/access.ts builds, varied in action, roles, counts and
 * length (so the input written into WASM memory changes size from call to call).
 */
function podAccessInputs(count: number): Array<DecisionInput<typeof decisions.podsAccess>> {
  return Array.from({ length: count }, (_, i) => ({
    action: `${POD_ACTIONS[i % POD_ACTIONS.length]}${i % 7 === 0 ? `-${'x'.repeat(i % 97)}` : ''}`,
    caller: { kind: i % 11 === 0 ? ('agent' as const) : ('human' as const), role: ROLES[i % ROLES.length]! },
    member: i % 3 === 0 ? undefined : { role: ROLES[(i >> 2) % 3]! },
    pod: i % 13 === 0 ? undefined : { owner_count: i % 4 },
  }));
}

const TOOLS = ['repos.read_file', 'pulls.list', 'issues.create_comment', 'pulls.merge'];

/**
 * Inputs shaped like the broker check's (the hot path; see the header of policies/broker/check.rego):
 * chains of 1..4 grants, pod and seat targets, listed and member audiences, revoked and expired
 * links, stopped runtimes, other brokers, so every rule and every deny reason is exercised.
 */
function brokerCheckInputs(count: number): Array<DecisionInput<typeof decisions.brokerCheck>> {
  const now = 1_800_000_000_000;
  return Array.from({ length: count }, (_, i) => {
    const agentId = `agt_${String(i).padStart(26, '0')}`;
    const podId = `pod_${String(i % 37).padStart(26, '0')}`;
    const members = [agentId, ...Array.from({ length: i % 40 }, (_, m) => `user-${m}`)];
    const levels = 1 + (i % 4);
    const chain = Array.from({ length: levels }, (_, level) => ({
      id: `grt_${i}_${level}`,
      parent_id: level === levels - 1 ? null : `grt_${i}_${level + 1}`,
      root_id: `grt_${i}_${levels - 1}`,
      connection_id: 'con_soak',
      broker_id: i % 17 === 0 && level === 0 ? 'brk_other' : 'brk_soak',
      revoked: i % 29 === 0 && level > 0,
      expires_at_ms: i % 23 === 0 ? now - 1 : now + 3_600_000 * (level + 1),
      target: i % 5 === 0 ? { kind: 'seat' as const, id: agentId, pod_id: podId } : { kind: 'pod' as const, id: podId, pod_id: podId },
      audience_mode: i % 3 === 0 ? ('listed' as const) : ('members' as const),
      audience: i % 3 === 0 ? members.slice(0, 1 + (i % 7)) : [],
      tools: TOOLS.slice(0, 4 - level),
      write_mode: level === 0 && i % 2 === 0 ? ('read' as const) : ('write' as const),
      budget: { calls: 1000, window_ms: 3_600_000 },
      ...(i % 3 === 1 && level === 0 ? { resources: { repositories: ['acme/repo-1*', 'acme/*-2'] } } : {}),
    }));
    return {
      now_ms: now,
      broker_id: 'brk_soak',
      local_time: { time_zone: 'UTC', weekday: 1 + (i % 7), hour: i % 24, minute: i % 60 },
      tool: {
        name: TOOLS[i % TOOLS.length]!,
        ...(i % TOOLS.length === 3 ? {} : { access: i % TOOLS.length === 2 ? ('write' as const) : ('read' as const) }),
        ...(i % 2 === 0 ? { resource: { repository: '/repository', ref: '/ref' } } : {}),
      },
      args: { repository: `acme/repo-${i % 9}`, ref: 'refs/heads/main', body: 'x'.repeat(i % 50) },
      args_digest: `sha256:${String(i).padStart(64, '0')}`,
      resource: i % 2 === 0 ? { repository: `acme/repo-${i % 9}`, ref: 'refs/heads/main' } : {},
      principal:
        i % 43 === 0 ? undefined : { kind: i % 6 === 0 ? ('user' as const) : ('agent' as const), id: i % 6 === 0 ? 'user-1' : agentId },
      principal_source: i % 47 === 0 ? ('asserted' as const) : ('subject_token' as const),
      trust_asserted_principal: false,
      chain,
      connection: {
        id: 'con_soak',
        owner_id: 'owner-1',
        kind: 'code_hosting_app',
        status: i % 31 === 0 ? ('disconnected' as const) : ('connected' as const),
        tools: { 'repos.read_file': 'read' as const, 'pulls.list': 'read' as const, 'issues.create_comment': 'write' as const },
      },
      members: { [podId]: i % 11 === 0 ? [] : members.slice(0, 2) },
      runtime: { desired_state: i % 19 === 0 ? ('stopped' as const) : ('running' as const) },
      session: { labels: {}, calls: {} },
    };
  });
}

/** The heaviest decision the module has that we know how to feed, in order of preference. */
const WORKLOADS: Array<{ decision: DecisionDefinition; inputs: (count: number) => object[] }> = [
  { decision: decisions.brokerCheck, inputs: brokerCheckInputs },
  { decision: decisions.podsAccess, inputs: podAccessInputs },
];

/** A full GC before each sample, so RSS shows retained memory rather than garbage not yet collected. */
function collectGarbage(): void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed();
  try {
    // `npm run soak:policy` runs plain `node`; a context made after this flag gets a gc().
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  } catch {
    // No GC on demand here: samples then include garbage not yet collected, RSS is noisier.
  }
}

function sample(engine: PolicyEngine, evaluations: number): SoakSample {
  collectGarbage();
  const memory = process.memoryUsage();
  return { evaluations, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, wasmBytes: engine.wasmMemoryBytes ?? -1 };
}

export async function runPolicySoak(overrides: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const options = { ...DEFAULT_SOAK, ...overrides };
  const engine = new PolicyEngine({ path: options.wasmPath, log: createLogger('silent'), decisionLog: 'off' });
  if (!(await engine.reload())) throw new Error(`cannot load ${options.wasmPath}`);
  if (engine.wasmMemoryBytes === undefined) throw new Error('cannot read the WASM memory of the loaded module');
  const workload = WORKLOADS.find((w) => engine.entrypoints.includes(w.decision.entrypoint));
  if (!workload) throw new Error(`the module has none of: ${WORKLOADS.map((w) => w.decision.entrypoint).join(', ')}`);

  const inputs = workload.inputs(1009);
  const started = Date.now();
  const samples = [sample(engine, 0)];
  const outcomes: Record<string, number> = {};
  for (let done = 1; done <= options.evaluations; done += 1) {
    const decision = engine.evaluate(workload.decision, inputs[done % inputs.length]) as unknown as { allow: boolean; reasons: string[] };
    const outcome = decision.allow ? 'allow' : (decision.reasons[0] ?? 'deny');
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (done % options.sampleEvery === 0 || done === options.evaluations) samples.push(sample(engine, done));
  }
  const elapsedMs = Date.now() - started;

  const baseline = samples.find((s) => s.evaluations >= options.warmup) ?? samples[samples.length - 1]!;
  const after = samples.filter((s) => s.evaluations >= baseline.evaluations);
  const wasmGrowthBytes = Math.max(...after.map((s) => s.wasmBytes)) - baseline.wasmBytes;
  const rssGrowthBytes = Math.max(...after.map((s) => s.rssBytes)) - baseline.rssBytes;
  return {
    entrypoint: workload.decision.entrypoint,
    outcomes,
    revision: engine.revision!,
    samples,
    wasmGrowthBytes,
    rssGrowthBytes,
    flat: wasmGrowthBytes <= options.wasmToleranceBytes && rssGrowthBytes <= options.rssToleranceBytes,
    elapsedMs,
    options,
  };
}

export function formatSoakReport(report: SoakReport): string {
  const mib = (bytes: number) => (bytes / MiB).toFixed(2).padStart(10);
  const rows = report.samples.map(
    (s) => `${String(s.evaluations).padStart(11)} ${mib(s.rssBytes)} ${mib(s.heapUsedBytes)} ${mib(s.wasmBytes)}`,
  );
  const { options } = report;
  return [
    `policy soak: ${report.entrypoint} (${report.revision.slice(0, 19)}…), ${options.evaluations} evaluations in ${(report.elapsedMs / 1000).toFixed(1)} s`,
    `${'evaluations'.padStart(11)} ${'rss MiB'.padStart(10)} ${'heap MiB'.padStart(10)} ${'wasm MiB'.padStart(10)}`,
    ...rows,
    `decisions: ${Object.entries(report.outcomes)
      .map(([outcome, n]) => `${outcome} ${n}`)
      .join(', ')}`,
    `after warm-up (${options.warmup}): wasm +${report.wasmGrowthBytes} bytes (tolerance ${options.wasmToleranceBytes}),` +
      ` rss +${(report.rssGrowthBytes / MiB).toFixed(2)} MiB (tolerance ${(options.rssToleranceBytes / MiB).toFixed(0)} MiB)`,
    report.flat ? 'memory is flat' : 'MEMORY GROWS',
  ].join('\n');
}

function positiveInt(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`not a positive integer: ${value}`);
  return parsed;
}

async function main(): Promise<number> {
  const evaluations = positiveInt(process.env.SOAK_EVALUATIONS, DEFAULT_SOAK.evaluations);
  // Ten samples at least, so a short run still has a warm-up sample and several after it.
  const sampleEvery = positiveInt(
    process.env.SOAK_SAMPLE_EVERY,
    Math.max(1, Math.min(DEFAULT_SOAK.sampleEvery, Math.floor(evaluations / 10))),
  );
  const report = await runPolicySoak({
    wasmPath: process.env.POLICY_WASM_PATH || DEFAULT_SOAK.wasmPath,
    evaluations,
    sampleEvery,
    warmup: Math.min(DEFAULT_SOAK.warmup, sampleEvery),
  });
  console.log(formatSoakReport(report));
  return report.flat ? 0 : 1;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(2);
    },
  );
}
