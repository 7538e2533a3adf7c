import { execFile } from 'node:child_process';
import path from 'node:path';

/** grantctl as a script runs it: the built CLI in a child process, configured by its environment. */
export interface GrantctlRun {
  code: number;
  stdout: string;
  stderr: string;
}

const root = path.resolve(__dirname, '../..');
const bin = path.join(root, 'clients/grantctl/bin/grantctl.js');

/**
 * `via: 'npx'` runs it exactly as the README says, `npx grantctl …` from the repository root (the
 * workspace's bin, linked into node_modules/.bin); the default runs the same bin with node, faster.
 */
export function grantctl(args: string[], env: { url: string; token: string; via?: 'node' | 'npx' }): Promise<GrantctlRun> {
  const [command, argv] = env.via === 'npx' ? ['npx', ['--no-install', 'grantctl', ...args]] : [process.execPath, [bin, ...args]];
  return new Promise((resolve) => {
    execFile(
      command,
      argv,
      { cwd: root, env: { ...process.env, GRANT_BROKER_URL: env.url, GRANT_BROKER_TOKEN: env.token }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
