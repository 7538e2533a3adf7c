// What `npm run bench` prints: its tables, the targets judged against baselines measured in the
// same run (so that they mean the same on any machine), and whether every allowed call was
// recorded (the exit code says so too).
import { machine } from './bench-harness.mjs';
import { mergeRefusals, refusalsText } from './bench-refusals.mjs';
import { RATE, RATE_CONNECTIONS, RATE_S, RATE_WARMUP_S } from './bench-scale.mjs';

/** Runs whose cores lost this share of their time to the hypervisor (steal) are named in the report. */
const STEAL_NOTICE_PCT = 5;
/**
 * The targets, each against what this machine does in the same run rather than a fixed figure:
 * - latency: the p99 at RATE checks/s with decision logs on at most DISK_TIMES the p99 of the
 *   disk's own write + fdatasync at that rate (on Postgres's data device: a check waits for its
 *   record's commit, and a commit for that flush), plus DISK_PLUS_MS for everything else;
 * - throughput: the service's checks/s, the median of its alternating rounds, at least OPA_TIMES
 *   what `opa run --server` answers with the same policy and input under the same load;
 * - CPU: at most CPU_MICROS of the service process's CPU time per check, decision logs on.
 */
const TARGET = { DISK_TIMES: 2, DISK_PLUS_MS: 1, OPA_TIMES: 1.5, CPU_MICROS: 250 };

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** A row of the tables: the per-round figures and the refusals are for lines of their own, not for a table cell. */
const tableRow = (figures) =>
  figures &&
  Object.fromEntries(Object.entries(figures).filter(([key]) => !['roundsPerSec', 'roundsCpuMicrosPerCheck', 'refusals'].includes(key)));

/** The figures of one autocannon run, as the tables show them. */
export const summary = (r) => ({
  requestsPerSec: Math.round(r.requests.average),
  p50: r.latency.p50,
  p90: r.latency.p90,
  p99: r.latency.p99,
  ok2xx: r['2xx'],
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  ...r.machine,
  ...(r.refusals ? { refusals: r.refusals } : {}),
});

/** The mean of each figure over several runs of one target; their refusals summed. */
export function meanSummary(runs) {
  const all = runs.map(summary);
  const figures = Object.keys(all[0]).filter((key) => key !== 'refusals');
  return {
    ...Object.fromEntries(figures.map((key) => [key, Math.round(all.reduce((sum, s) => sum + s[key], 0) / all.length)])),
    refusals: mergeRefusals(all.map((s) => s.refusals)),
  };
}

/** Prints the results; `settings` are the run's loads (connections, durations, decision logging). */
export function report(r, { CONNECTIONS, DURATION_S, DECISION_LOG, PAIR_ROUNDS, PAIR_S, SCALE_S }) {
  const allowed = r.recorded.pending ?? 0;
  const ratio = (a, b, digits = 2) => (a / b).toFixed(digits);
  console.log('\n=== broker check benchmark ===');
  console.log(`machine: ${machine()}`);
  console.log(
    `load: autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per target; chain depth 3 (4 grants); agent subjectToken; ` +
      `the service with DECISION_LOG=${DECISION_LOG} unless a row says otherwise`,
  );
  const loadRows = {
    'service POST /api/broker/check': r.service,
    [`service, ${PAIR_ROUNDS} rounds of ${PAIR_S} s, alternating`]: r.pairPlain,
    [`service, org packages + resources, alternating`]: r.serviceOrg,
    [`service, information_flow enforced, alternating`]: r.serviceInformationFlow,
    [`service, DECISION_LOG=off, alternating`]: r.serviceUnlogged,
    [`service, every check traced (OpenTelemetry, OTLP), alternating`]: r.serviceTraced,
    ...(r.serviceUntreed ? { [`service, TRAIL_TREE=off, alternating`]: r.serviceUntreed } : {}),
    ...(r.serviceImageNode ? { [`service on Node ${r.imageNodeVersion} (the image's), alternating`]: r.serviceImageNode } : {}),
    ...(r.serviceImageNodeTraced
      ? { [`service on Node ${r.imageNodeVersion}, every check traced (OTLP), alternating`]: r.serviceImageNodeTraced }
      : {}),
    'opa run --server (REST), alternating': r.opaRest,
  };
  console.table(Object.fromEntries(Object.entries(loadRows).map(([title, row]) => [title, tableRow(row)])));
  printRefusals(loadRows);
  console.log(`in-process WASM evaluation of broker/check: ${r.wasmEvaluationsPerSec} evaluations/s (one core)`);
  console.log(`service CPU per check (user + system of its process, main run): ${r.cpuMicrosPerCheck} µs`);
  if (r.extAuthz) {
    const { plain, grpc, cpuRatio } = r.extAuthz;
    console.log(
      `Envoy ext_authz over gRPC (MCP metadata) / plain check, alternating rounds on one process: ${grpc.checksPerSec} / ${plain.checksPerSec} checks/s ` +
        `(median round), ${grpc.cpuMicrosPerCheck} / ${plain.cpuMicrosPerCheck} µs CPU per check = ${cpuRatio}× (target ≤ 1.15×); ` +
        `not allowed: ${grpc.notAllowed} / ${plain.notAllowed}` +
        (plain.refusals ? ` (plain non-2xx: ${refusalsText(plain.refusals)})` : ''),
    );
  }
  console.log(
    `\nfixed rate: ${RATE} checks/s evenly spaced, at most ${RATE_CONNECTIONS} connections, ${RATE_WARMUP_S} s warm-up + ${RATE_S} s ` +
      `(latency in ms from each request's due time; generatorLoopDelay*: the load generator's own stalls)`,
  );
  // The reference commits each request on its own where the service groups concurrent records
  // into one commit, so the service can be faster than it: not a lower bound. The floor groups them.
  const rateRows = {
    [`DECISION_LOG=${DECISION_LOG}`]: r.rateLogged,
    'floor: bare HTTP + Redis script + a group-committed row': r.rateGroupedFloor,
    'reference (not a lower bound): bare HTTP + Redis script + one ungrouped commit': r.rateFloor,
    'DECISION_LOG=off': r.rateOff,
    'DECISION_LOG=all, phases timed': r.ratePhased,
    'WORKERS=1': r.workers1Rate,
    'WORKERS=2': r.workers2Rate,
    'Redis Cluster (3 masters)': r.clusterRate,
  };
  console.table(Object.fromEntries(Object.entries(rateRows).map(([title, row]) => [title, tableRow(row)])));
  printRefusals(rateRows);
  if (r.rateGroupedFloor) {
    console.log(
      `the check / the floor (the same work without the service's code) at ${RATE}/s: p50 ${ratio(r.rateLogged.p50, r.rateGroupedFloor.p50)}, ` +
        `p99 ${ratio(r.rateLogged.p99, r.rateGroupedFloor.p99)}`,
    );
  }
  const d = r.diskSync;
  console.log(
    `disk: 8 kB write + fdatasync at ${RATE}/s (a commit's wait): p50 ${d.p50} ms, p90 ${d.p90} ms, p99 ${d.p99} ms, max ${d.max} ms ` +
      `(same device as Postgres's data directory: ${d.samePostgresDevice})`,
  );
  if (r.workers1) {
    console.log(`\nscale: ${CONNECTIONS} connections, ${SCALE_S} s each, DECISION_LOG=all`);
    const scaleRows = { 'WORKERS=1': r.workers1, 'WORKERS=2': r.workers2, 'Redis Cluster (3 masters)': r.cluster };
    console.table(Object.fromEntries(Object.entries(scaleRows).map(([title, row]) => [title, tableRow(row)])));
    printRefusals(scaleRows);
  }
  console.log(targetsLine(r, DECISION_LOG));
  const imageNode = r.serviceImageNode;
  console.log(
    `ratios: service / opa REST = ${ratio(r.service.requestsPerSec, r.opaRest.requestsPerSec)} (main run)` +
      (imageNode
        ? `, ${ratio(median(imageNode.roundsPerSec ?? [imageNode.requestsPerSec]), r.opaRest.requestsPerSec)} on Node ${r.imageNodeVersion}, the image's (median of its alternating rounds)`
        : '') +
      '; ' +
      (r.workers1
        ? `WORKERS=2 / WORKERS=1 = ${ratio(r.workers2.requestsPerSec, r.workers1.requestsPerSec)}; ` +
          `Redis Cluster / one Redis = ${ratio(r.cluster.requestsPerSec, r.workers1.requestsPerSec)}; `
        : '') +
      `service with DECISION_LOG=off / opa REST (alternating-round mean) = ${ratio(r.serviceUnlogged.requestsPerSec, r.opaRest.requestsPerSec)}; ` +
      `service / in-process WASM = ${ratio(r.service.requestsPerSec, r.wasmEvaluationsPerSec, 3)}; ` +
      `p99 service / opa REST = ${ratio(r.service.p99, Math.max(r.opaRest.p99, 0.001))}; ` +
      `service with org packages and resources / without (alternating rounds) = ${ratio(r.serviceOrg.requestsPerSec, r.pairPlain.requestsPerSec, 3)}; ` +
      `service with decision logs / without (alternating rounds) = ${ratio(r.pairPlain.requestsPerSec, r.serviceUnlogged.requestsPerSec, 3)}`,
  );
  console.log(
    `CPU per check, alternating rounds: DECISION_LOG=${DECISION_LOG} ${r.pairPlain.cpuMicrosPerCheck} µs; org packages + resources ` +
      `${r.serviceOrg.cpuMicrosPerCheck} µs (${ratio(r.serviceOrg.cpuMicrosPerCheck, r.pairPlain.cpuMicrosPerCheck, 3)}×); ` +
      `DECISION_LOG=off ${r.serviceUnlogged.cpuMicrosPerCheck} µs (decision logs cost ${ratio(r.pairPlain.cpuMicrosPerCheck, r.serviceUnlogged.cpuMicrosPerCheck, 3)}×)` +
      (imageNode
        ? `; on Node ${r.imageNodeVersion} ${imageNode.cpuMicrosPerCheck} µs (${ratio(imageNode.cpuMicrosPerCheck, r.pairPlain.cpuMicrosPerCheck, 3)}× ${process.version}'s), ` +
          `${ratio(imageNode.requestsPerSec, r.pairPlain.requestsPerSec, 3)}× its checks/s`
        : ''),
  );
  console.log(
    `tracing, CPU per check traced (OTLP, every check) / untraced, alternating rounds: on ${process.version} ` +
      `${r.serviceTraced.cpuMicrosPerCheck} / ${r.pairPlain.cpuMicrosPerCheck} µs = ${ratio(r.serviceTraced.cpuMicrosPerCheck, r.pairPlain.cpuMicrosPerCheck, 3)}×, ` +
      `checks/s ${ratio(median(r.serviceTraced.roundsPerSec), median(r.pairPlain.roundsPerSec), 3)}×` +
      (r.serviceImageNodeTraced
        ? `; on Node ${r.imageNodeVersion} ${r.serviceImageNodeTraced.cpuMicrosPerCheck} / ${imageNode.cpuMicrosPerCheck} µs = ` +
          `${ratio(r.serviceImageNodeTraced.cpuMicrosPerCheck, imageNode.cpuMicrosPerCheck, 3)}×, checks/s ` +
          `${ratio(median(r.serviceImageNodeTraced.roundsPerSec), median(imageNode.roundsPerSec), 3)}×`
        : ''),
  );
  console.log(`opa run --server CPU per decision (its process, alternating rounds): ${r.opaRest.cpuMicrosPerCheck} µs`);
  const byRound = Object.entries(r)
    .filter(([, figures]) => figures?.roundsCpuMicrosPerCheck)
    .map(([key, figures]) => `${key} ${figures.roundsCpuMicrosPerCheck.join(' / ')}`);
  if (byRound.length) console.log(`CPU per check of each alternating round, µs (each round in another order): ${byRound.join('; ')}`);
  if (r.serviceUntreed) {
    console.log(
      `trail tree on / off (alternating rounds): service CPU per check ${r.pairPlain.cpuMicrosPerCheck} / ${r.serviceUntreed.cpuMicrosPerCheck} µs = ` +
        `${ratio(r.pairPlain.cpuMicrosPerCheck, r.serviceUntreed.cpuMicrosPerCheck, 3)}×; checks/s ` +
        `${ratio(r.pairPlain.requestsPerSec, r.serviceUntreed.requestsPerSec, 3)}× (the tree's hashing in Postgres shows in checks/s, not in the service's CPU)`,
    );
  }
  // Steal is time the hypervisor kept the guest's cores from it: other guests, and on a virtual
  // machine also its own emulation of this guest's disk flushes (an fdatasync per commit: 1 000
  // flushes a second alone can show several per cent of steal).
  const stolen = Object.entries(r)
    .filter(([, row]) => row?.stealPct >= STEAL_NOTICE_PCT)
    .map(([key, row]) => `${key} ${row.stealPct} %`);
  if (stolen.length > 0) {
    console.log(`steal >= ${STEAL_NOTICE_PCT} % of the cores' time (the hypervisor's, not the service's) during: ${stolen.join(', ')}`);
  }
  console.log(`call records: ${JSON.stringify(r.recorded)}; 2xx answers: ${r.service.ok2xx}`);
  const flow = ratio(r.serviceInformationFlow.cpuMicrosPerCheck, r.pairPlain.cpuMicrosPerCheck, 3);
  console.log(
    `session rules: information_flow enforced ${r.serviceInformationFlow.cpuMicrosPerCheck} µs CPU per check, ${flow}× the plain ` +
      `one's (target <= 1.10: ${Number(flow) <= 1.1 ? 'met' : 'not met'}); Redis bytes per tree (${r.flowTree.levels} grants, ` +
      `MEMORY USAGE of every key): ${r.flowTree.totalBytes} with a label, of which the session ${r.flowTree.sessionBytes}; ` +
      `${r.plainTree.totalBytes} without org rules (session ${r.plainTree.sessionBytes})`,
  );
  if (r.trail) {
    console.log(
      `call trail on disk: ${r.trail.bytesPerRecord} bytes per record (${r.trail.bytes} bytes, indexes included, for ${r.trail.records} records)`,
    );
  }
  const m = r.redisMemory;
  console.log(
    `redis memory: ${m.bytesPerCallPerLevel} bytes per allowed call per chain level (${m.calls} calls through ${m.levels} levels, exact windows: ${m.totalBytes} bytes)`,
  );
  // A check answers only once its record is durable, so records >= answers; the difference is
  // the calls still in flight when autocannon stopped counting (at most one per connection).
  const complete = allowed >= r.service.ok2xx && allowed - r.service.ok2xx <= CONNECTIONS && !r.recorded.denied;
  console.log(
    complete ? 'every allowed call is recorded (pending records >= 2xx answers, none denied)' : 'MISMATCH between answers and records',
  );
  if (!complete) process.exitCode = 1;
}

/** Below a table: each row's non-2xx answers by status and problem code, or that every row's were 2xx. */
function printRefusals(rows) {
  const refused = Object.entries(rows).filter(([, row]) => row && (row.non2xx > 0 || Object.keys(row.refusals ?? {}).length > 0));
  if (refused.length === 0) {
    console.log('non-2xx: none in any row above');
    return;
  }
  for (const [title, row] of refused) {
    const rounds = row.roundsPerSec ? ` (all ${row.roundsPerSec.length} rounds; the table's non2xx is their mean)` : '';
    console.log(`non-2xx, ${title}: ${refusalsText(row.refusals)}${rounds}`);
  }
}

/**
 * The targets line: each figure, its target as computed from this run's baselines, and whether it
 * is met. `decisionLog` is the DECISION_LOG of the rows judged (the targets are for `all`).
 */
export function targetsLine(r, decisionLog) {
  const verdict = (met) => (met ? 'met' : 'MISSED');
  const logs = decisionLog === 'all' ? '' : ` (judged on DECISION_LOG=${decisionLog} rows; the targets are for all)`;

  const disk = r.diskSync;
  const latencyTarget = TARGET.DISK_TIMES * disk.p99 + TARGET.DISK_PLUS_MS;
  const device =
    { yes: '', no: ", measured off Postgres's data device", unknown: "; Postgres's data device unknown" }[disk.samePostgresDevice] ?? '';
  const latency =
    `p99 at ${RATE}/s = ${r.rateLogged.p99} ms, target <= ${TARGET.DISK_TIMES} × the disk's fdatasync p99 ` +
    `(${disk.p99} ms${device}) + ${TARGET.DISK_PLUS_MS} ms = ${latencyTarget.toFixed(2)} ms: ${verdict(r.rateLogged.p99 <= latencyTarget)}`;

  const rounds = r.pairPlain.roundsPerSec ?? [r.pairPlain.requestsPerSec];
  const opaRounds = r.opaRest.roundsPerSec ?? [r.opaRest.requestsPerSec];
  // Each round's ratio to opa's turn in the same round (the two ran a few seconds apart), then their median.
  const opaRatio = median(rounds.map((perSec, i) => perSec / (opaRounds[i] ?? opaRounds[0])));
  const throughput =
    `service / opa run --server = ${opaRatio.toFixed(2)} (median of ${rounds.length} alternating rounds' ratios, ` +
    `${rounds.join('/')} against ${opaRounds.join('/')} checks/s), target >= ${TARGET.OPA_TIMES}: ${verdict(opaRatio >= TARGET.OPA_TIMES)}`;

  const cpu = r.pairPlain.cpuMicrosPerCheck;
  const cpuPart = `CPU per check = ${cpu} µs (alternating rounds), target <= ${TARGET.CPU_MICROS} µs: ${verdict(cpu <= TARGET.CPU_MICROS)}`;

  return `targets${logs}: latency ${latency}; throughput ${throughput}; ${cpuPart}`;
}
