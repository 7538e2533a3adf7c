import { execFile } from 'node:child_process';
import path from 'node:path';

/** grantctl as a script runs it: the built CLI in a child process, configured by its environment. */
export interface GrantctlRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GrantctlEnv {
  url: string;
  /** GRANT_BROKER_TOKEN: a person's token. */
  token: string;
  /** GRANT_BROKER_AGENT_TOKEN: an installed agent's runtime token (unset when not given). */
  agentToken?: string;
  via?: 'node' | 'npx';
}

const root = path.resolve(__dirname, '../..');
const bin = path.join(root, 'clients/grantctl/bin/grantctl.js');

/**
 * `via: 'npx'` runs it exactly as the docs say, `npx @grant-broker/grantctl …` from the repository
 * root (the workspace's package, linked into node_modules); the default runs the same bin with node,
 * faster.
 * Both run grantctl's own build (clients/grantctl/dist, written by `npm run build`).
 */
export function grantctl(args: string[], env: GrantctlEnv): Promise<GrantctlRun> {
  const [command, argv] =
    env.via === 'npx' ? ['npx', ['--no-install', '@grant-broker/grantctl', ...args]] : [process.execPath, [bin, ...args]];
  const childEnv: NodeJS.ProcessEnv = { ...process.env, GRANT_BROKER_URL: env.url, GRANT_BROKER_TOKEN: env.token };
  delete childEnv.GRANT_BROKER_AGENT_TOKEN;
  if (env.agentToken !== undefined) childEnv.GRANT_BROKER_AGENT_TOKEN = env.agentToken;
  return new Promise((resolve) => {
    execFile(command, argv, { cwd: root, env: childEnv, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
