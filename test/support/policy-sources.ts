import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildBundle, scratchDir } from './policy-bundles';

const root = path.resolve(__dirname, '../..');
let work: string | undefined;

export interface PolicyChange {
  /** Files written over a copy of policies/, by path under it (`system/log.rego`, `org/x.rego`): Rego text. */
  files?: Record<string, string>;
  /** ORG_POLICY_MODES at build time (`broker.check.information_flow=enforce,…`). */
  modes?: string;
}

/**
 * The service's policy built from its sources as `npm run build:policy` builds it
 * (scripts/build-policy.mjs), with `files` written over a copy of policies/ and `modes` as
 * ORG_POLICY_MODES, in a directory removed when the test process ends. Returns the built module's
 * path without its extension: `<path>.wasm` is the module (POLICY_WASM_PATH), `<path>.tar.gz` the
 * bundle (what `policy impact --bundle` reads).
 */
export function policyFromSources(name: string, change: PolicyChange = {}): string {
  work ??= scratchDir('policy-sources-');
  const env: Record<string, string> = {};
  if (change.files) {
    const sources = path.join(work, `${name}-policies`);
    cpSync(path.join(root, 'policies'), sources, { recursive: true });
    for (const [file, text] of Object.entries(change.files)) {
      mkdirSync(path.dirname(path.join(sources, file)), { recursive: true });
      writeFileSync(path.join(sources, file), text);
    }
    env.POLICY_SOURCES = sources;
  }
  if (change.modes !== undefined) env.ORG_POLICY_MODES = change.modes;
  buildBundle(work, name, env);
  return path.join(work, name);
}
