import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { z } from 'zod';

/** GitHub's REST API, where an app's `apiUrl` does not say otherwise. */
export const GITHUB_API_URL = 'https://api.github.com';

const appName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'an app name: lowercase letters, digits, _ and -, at most 64');

const appSettings = z
  .strictObject({
    appId: z.union([z.number().int().positive(), z.string().regex(/^[1-9][0-9]{0,19}$/)]).transform(String),
    privateKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable')
      .optional(),
    privateKeyFile: z.string().min(1).optional(),
    apiUrl: z
      .url({ protocol: /^https?$/ })
      .transform((url) => url.replace(/\/+$/, ''))
      .default(GITHUB_API_URL),
  })
  .refine(
    (app) => (app.privateKeyEnv === undefined) !== (app.privateKeyFile === undefined),
    'set exactly one of privateKeyEnv and privateKeyFile',
  );

/** `GITHUB_APPS`: JSON text naming each GitHub App the operator lets connections mint through. */
export const gitHubAppsSetting = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON: {"<name>": {"appId", "privateKeyEnv" | "privateKeyFile", "apiUrl"?}}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(appName, appSettings))
  .default({});

export type GitHubAppSettings = z.output<typeof gitHubAppsSetting>;

/**
 * An app's private key, held where nothing prints it: JSON, a log line and `inspect` all show a
 * placeholder; only the token minter reads the PEM.
 */
export class GitHubAppKey {
  readonly #pem: string;

  constructor(pem: string) {
    this.#pem = pem;
  }

  pem(): string {
    return this.#pem;
  }

  toJSON(): string {
    return '[private key]';
  }

  [inspect.custom](): string {
    return 'GitHubAppKey [private key]';
  }
}

export interface GitHubApp {
  name: string;
  appId: string;
  apiUrl: string;
  privateKey: GitHubAppKey;
}

export type GitHubApps = ReadonlyMap<string, GitHubApp>;

/**
 * Reads each app's private key (from the variable or the file its settings name) and checks it is
 * an RSA private key, so a missing or broken key stops the process at start rather than at the
 * first call. Problems are returned by field; the key's text never appears in one.
 */
export function resolveGitHubApps(
  settings: GitHubAppSettings,
  env: NodeJS.ProcessEnv,
): { apps: GitHubApps; problems: Array<{ path: string; message: string }> } {
  const apps = new Map<string, GitHubApp>();
  const problems: Array<{ path: string; message: string }> = [];
  for (const [name, app] of Object.entries(settings)) {
    const source = app.privateKeyEnv ? `privateKeyEnv (${app.privateKeyEnv})` : `privateKeyFile (${app.privateKeyFile})`;
    const path = `GITHUB_APPS.${name}.${app.privateKeyEnv ? 'privateKeyEnv' : 'privateKeyFile'}`;
    let pem: string | undefined;
    try {
      pem = app.privateKeyEnv ? env[app.privateKeyEnv] : readFileSync(app.privateKeyFile!, 'utf8');
    } catch {
      problems.push({ path, message: `${source} cannot be read` });
      continue;
    }
    if (!pem) {
      problems.push({ path, message: `${source} is not set` });
      continue;
    }
    // A key pasted on one line with literal \n, as .env files often hold it.
    pem = pem.includes('\\n') ? pem.replaceAll('\\n', '\n') : pem;
    try {
      if (createPrivateKey(pem).asymmetricKeyType !== 'rsa') throw new Error('not RSA');
    } catch {
      problems.push({ path, message: `${source} does not hold an RSA private key in PEM` });
      continue;
    }
    apps.set(name, { name, appId: app.appId, apiUrl: app.apiUrl, privateKey: new GitHubAppKey(pem) });
  }
  return { apps, problems };
}
