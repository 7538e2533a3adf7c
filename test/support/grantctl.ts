import { execFile } from 'node:child_process';
import path from 'node:path';

/** grantctl as a script runs it: the built CLI in a child process, configured by its environment. */
export interface GrantctlRun {
  code: number;
  stdout: string;
  stderr: string;
}

const bin = path.resolve(__dirname, '../../clients/grantctl/bin/grantctl.js');

export function grantctl(args: string[], env: { url: string; token: string }): Promise<GrantctlRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, GRANT_BROKER_URL: env.url, GRANT_BROKER_TOKEN: env.token }, timeout: 20_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
