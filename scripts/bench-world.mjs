// The world `npm run bench` checks against, built through the service's own API: a pod, an agent
// with a runtime token, a broker, a connection and a chain of depth 3; the check's body and the
// policy input the service builds for it (for the baselines); Redis bytes per call it keeps.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REDIS_KEY_PREFIX, REDIS_URL, api, humanToken, registerBroker, require, root, run } from './bench-harness.mjs';

const { Redis } = require('ioredis');

/** What every benchmarked check calls with: a read of a file of a repository at a ref. */
export const CHECK_ARGS = { repository: 'acme/api', ref: 'refs/heads/feature/bench', path: 'docs/README.md' };
/** What the org-packages run constrains its chain to (at the root; the children inherit it). */
export const BENCH_RESOURCES = {
  repositories: ['acme/*', 'acme-labs/docs'],
  refs: ['refs/heads/feature/*', 'refs/heads/release-*'],
  paths: ['docs/**', 'src/**'],
};

/** Pod, member agent, broker, connection, and a depth-3 chain of grants, through the API. */
export async function seed(base, db, { resources, name = 'bench' } = {}) {
  const owner = humanToken(`bench-owner-${run}`);
  const pod = await api(base, 'POST', '/api/pods', owner, { name: 'Bench pod' });
  const agent = await api(base, 'POST', `/api/registry/pods/${pod.id}/agents`, owner, { name: 'bench-bot' });
  const agentToken = (await api(base, 'POST', `/api/registry/pods/${pod.id}/agents/bench-bot/runtime-tokens`, owner, { name: 'bench' }))
    .token;
  const broker = await registerBroker(db, `${name}-broker`);
  const connection = await api(base, 'POST', '/api/connections', owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `${name}-${run}`,
    tools: [{ name: 'repos.read_file', access: 'read', resource: { repository: '/repository', ref: '/ref', path: '/path' } }],
  });
  // Large enough never to deny during the run; a short window keeps the sorted sets small.
  const budget = { calls: 1_000_000, windowMs: 1000 };
  let grant = await api(base, 'POST', '/api/grants', owner, {
    connectionId: connection.id,
    target: { kind: 'pod', id: pod.id },
    tools: ['repos.read_file'],
    budget,
    ...(resources ? { resources } : {}),
  });
  for (let depth = 1; depth <= 3; depth += 1) grant = await api(base, 'POST', `/api/grants/${grant.id}/attenuate`, agentToken, {});
  return { brokerToken: broker.token, agentToken, agentId: agent.agentId, leafId: grant.id };
}

/**
 * The policy module of the build at `buildRoot` (its policies/, its scripts/build-policy.mjs and
 * dist/) with the example information_flow enforced and private repositories that hold the
 * checked one: every allowed check is labelled `private_data` and reads its tree's labels.
 * Answers the module's path.
 */
export function buildFlowPolicy(buildRoot = root) {
  const flowDir = mkdtempSync(path.join(tmpdir(), 'bench-flow-'));
  cpSync(path.join(buildRoot, 'policies'), path.join(flowDir, 'policies'), { recursive: true });
  writeFileSync(
    path.join(flowDir, 'policies/org/repositories.rego'),
    'package org\n\nprivate_repositories := ["acme/*"]\n\npublic_repositories := ["oss/*"]\n',
  );
  const out = path.join(flowDir, 'policy.wasm');
  execFileSync(process.execPath, [path.join(buildRoot, 'scripts/build-policy.mjs')], {
    cwd: buildRoot,
    env: {
      ...process.env,
      POLICY_SOURCES: path.join(flowDir, 'policies'),
      POLICY_BUILD_OUT: out,
      ORG_POLICY_MODES: 'broker.check.information_flow=enforce',
    },
    stdio: 'ignore',
  });
  return out;
}

/**
 * The builds a bench compares at the same moments: this one, and with `baseline` (another
 * checkout's root, built) that one too, its policy module and its service's entry point.
 */
export function benchBuilds(baseline) {
  const builds = [{ name: 'this build', root, env: {} }];
  if (baseline) {
    builds.push({
      name: 'baseline',
      root: baseline,
      env: { POLICY_WASM_PATH: path.join(baseline, 'build/policy/policy.wasm') },
      main: path.join(baseline, 'dist/src/main.js'),
    });
  }
  return builds;
}

/** The body of a check of the world's leaf grant, by its agent, with CHECK_ARGS. */
export function checkBody(world) {
  return JSON.stringify({ grantId: world.leafId, tool: 'repos.read_file', subjectToken: world.agentToken, args: CHECK_ARGS });
}

/**
 * The broker/check input the service builds for the seeded chain, by the service's own code: its
 * chain query, its facts query and its input builder (dist/), so baselines decide the same input.
 */
export async function checkInputFor(db, leafId, agentId, brokerId) {
  const { loadChainLinks } = require(path.join(root, 'dist/src/grants/facts.js'));
  const { readTreeFacts } = require(path.join(root, 'dist/src/broker/repository.js'));
  const { checkInput } = require(path.join(root, 'dist/src/broker/policy-input.js'));
  const { digestOf } = require(path.join(root, 'dist/src/kernel/digest.js'));
  const chain = (await loadChainLinks(db, leafId)).map((link) =>
    Object.fromEntries(Object.entries(link).filter(([key]) => key !== 'revoked')),
  );
  const principal = { kind: 'agent', id: agentId };
  const facts = await readTreeFacts(db, { chain, principal, podIds: [...new Set(chain.map((link) => link.target.pod_id))] });
  const subject = { principal, source: 'subject_token' };
  const localTime = { time_zone: 'UTC', weekday: 3, hour: 10, minute: 0 };
  return checkInput(
    {
      brokerId,
      tool: 'repos.read_file',
      args: CHECK_ARGS,
      argsDigest: digestOf(CHECK_ARGS),
      subject,
      trustAssertedPrincipal: false,
      now: Date.now(),
      localTime,
    },
    chain,
    facts,
    { stamp: '0', labels: {}, calls: {} },
  );
}

/**
 * Redis bytes per allowed call per chain level: a fresh chain of depth 3 (4 levels) with an exact
 * window (calls <= 1000) takes CALLS allowed calls; MEMORY USAGE of every level's window, less the
 * same keys' size after one call, divided by the calls after the first and the levels.
 */
export async function redisBytesPerCall(base, db, world) {
  const CALLS = 1000;
  const owner = humanToken(`bench-owner-${run}`);
  const podId = (await db('pods').first('id')).id;
  const connectionId = (await db('connections').first('id')).id;
  const budget = { calls: CALLS, windowMs: 3_600_000 };
  const chain = [
    await api(base, 'POST', '/api/grants', owner, { connectionId, target: { kind: 'pod', id: podId }, tools: ['repos.read_file'], budget }),
  ];
  for (let depth = 1; depth <= 3; depth += 1)
    chain.push(await api(base, 'POST', `/api/grants/${chain.at(-1).id}/attenuate`, world.agentToken, {}));
  const check = () =>
    api(base, 'POST', '/api/broker/check', world.brokerToken, {
      grantId: chain.at(-1).id,
      tool: 'repos.read_file',
      subjectToken: world.agentToken,
      args: {},
    });
  const redis = new Redis(REDIS_URL, { keyPrefix: REDIS_KEY_PREFIX });
  const usage = async () => {
    let bytes = 0;
    for (const grant of chain) bytes += Number(await redis.memory('USAGE', `{${chain[0].id}}:win:${grant.id}`, 'SAMPLES', '0'));
    return bytes;
  };
  try {
    await check();
    const one = await usage();
    for (let i = 1; i < CALLS; i += 50) await Promise.all(Array.from({ length: Math.min(50, CALLS - i) }, check));
    const all = await usage();
    return {
      calls: CALLS,
      levels: chain.length,
      bytesPerCallPerLevel: +((all - one) / ((CALLS - 1) * chain.length)).toFixed(1),
      totalBytes: all,
    };
  } finally {
    redis.disconnect();
  }
}

/**
 * Redis bytes one tree holds (MEMORY USAGE of each of its keys: version, every level's window,
 * session labels and calls per tool), and the session keys alone.
 */
export async function redisBytesPerTree(db, leafId) {
  const grant = await db('grants').where('id', leafId).first('root_id');
  const rootId = grant.root_id;
  const levels = await db('grants').where('root_id', rootId).select('id');
  const redis = new Redis(REDIS_URL, { keyPrefix: REDIS_KEY_PREFIX });
  try {
    const bytes = async (key) => Number((await redis.memory('USAGE', key, 'SAMPLES', '0')) ?? 0);
    const session = (await bytes(`{${rootId}}:labels`)) + (await bytes(`{${rootId}}:calls`));
    let windows = await bytes(`{${rootId}}:ver`);
    for (const level of levels) windows += await bytes(`{${rootId}}:win:${level.id}`);
    return { levels: levels.length, totalBytes: windows + session, sessionBytes: session };
  } finally {
    redis.disconnect();
  }
}

/**
 * A pod's agent granted `everything.echo` through a connection of its own broker (`label` names
 * them apart): the world the gateway's and the outcomes' benches call in.
 */
export async function seedEchoGrant(base, db, label) {
  const owner = humanToken(`bench-owner-${run}`);
  const pod = await api(base, 'POST', '/api/pods', owner, { name: `${label} bench pod` });
  await api(base, 'POST', `/api/registry/pods/${pod.id}/agents`, owner, { name: 'bench-bot' });
  const agentToken = (await api(base, 'POST', `/api/registry/pods/${pod.id}/agents/bench-bot/runtime-tokens`, owner, { name: 'bench' }))
    .token;
  const broker = await registerBroker(db, `${label}-bench`);
  const connection = await api(base, 'POST', '/api/connections', owner, {
    kind: 'code_hosting_app',
    brokerId: broker.id,
    externalInstallationId: `${label}-${run}`,
    tools: [{ name: 'everything.echo', access: 'read' }],
  });
  const grant = await api(base, 'POST', '/api/grants', owner, {
    connectionId: connection.id,
    target: { kind: 'pod', id: pod.id },
    tools: ['everything.echo'],
    budget: { calls: 1_000_000, windowMs: 1000 },
  });
  return { owner, brokerId: broker.id, brokerToken: broker.token, agentToken, grantId: grant.id };
}
