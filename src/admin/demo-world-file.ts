import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { findBrokerByToken } from '../credentials/lookup';
import { hashToken } from '../credentials/tokens';
import type { Database } from '../db/database';
import type { Services } from '../routes';
import { findLiveRuntimeToken } from '../registry/repository';
import type { DemoWorld } from './demo';

/**
 * The demo world `npm run demo` seeded, kept beside the installation's secrets (owner-only, git-
 * and Docker-ignored) so that `demo --json` prints that same world: its tokens are shown once by
 * the service and kept only as hashes there. The human tokens are not kept: they are signed again.
 */
export function demoWorldFile(stateDir: string): string {
  return path.resolve(stateDir, 'demo-world.json');
}

export function keepDemoWorld(file: string, world: DemoWorld): void {
  const { owner, member, ...rest } = world;
  const kept = { ...rest, owner: { userId: owner.userId }, member: { userId: member.userId } };
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const draft = `${file}.${process.pid}`;
  writeFileSync(draft, `${JSON.stringify(kept, null, 2)}\n`, { mode: 0o600 });
  renameSync(draft, file);
}

/**
 * The kept world, when there is one and it is still whole in this database (the same pod, and
 * the broker's and the agent's tokens still valid); undefined otherwise. Its human tokens are
 * empty: sign them again.
 */
export async function keptDemoWorld(file: string, services: Services, db: Database, nowMs: number): Promise<DemoWorld | undefined> {
  let kept: DemoWorld;
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as DemoWorld;
  } catch {
    return undefined;
  }
  if (!kept.pod?.id || !kept.owner?.userId || !kept.broker?.token || !kept.agent?.token || !kept.grant?.id) return undefined;
  try {
    await services.pods.read({ kind: 'human', userId: kept.owner.userId }, kept.pod.id);
  } catch {
    return undefined;
  }
  const broker = await findBrokerByToken(db, kept.broker.token);
  const agent = await findLiveRuntimeToken(db, hashToken(kept.agent.token), new Date(nowMs));
  if (broker?.brokerId !== kept.broker.id || agent?.agentId !== kept.agent.agentId) return undefined;
  return { ...kept, owner: { userId: kept.owner.userId, token: '' }, member: { userId: kept.member.userId, token: '' } };
}
