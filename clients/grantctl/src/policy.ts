import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import { print, UsageError } from './output';

/**
 * `policy eval`: one entrypoint of a compiled policy module (the service's build writes
 * build/policy/policy.wasm) on an input file, without a service, for a security engineer trying a
 * rule. The module is evaluated as OPA's WebAssembly SDK does it, the way the service does; the
 * repository's `npm run admin -- policy eval` also checks the input against the decision's schema,
 * and `npm run admin -- policy impact` replays logged decisions through a candidate.
 */
export function policyCommands(program: Command): void {
  const policy = program.command('policy').description('a compiled policy module, without a service');
  policy
    .command('eval')
    .description('evaluate an entrypoint of a compiled policy module (.wasm) on an input file')
    .requiredOption('--entrypoint <path>', 'e.g. broker/check (or broker/check/decision)')
    .requiredOption('--input <file>', 'a JSON input')
    .option('--module <file>', 'the module', 'build/policy/policy.wasm')
    .option('--json', 'the answer as JSON (the default)')
    .action(async (o: { entrypoint: string; input: string; module: string }) => {
      print(true, await evaluate(o), () => '');
    });
}

async function evaluate(o: { entrypoint: string; input: string; module: string }) {
  const wasm = await readFile(o.module).catch((error: Error) => {
    throw new UsageError(`${o.module}: ${error.message} (the service's \`npm run build:policy\` writes build/policy/policy.wasm)`);
  });
  let input: unknown;
  try {
    input = JSON.parse(await readFile(o.input, 'utf8'));
  } catch (error) {
    throw new UsageError(`${o.input}: ${(error as Error).message}`);
  }
  const module = await loadPolicy(wasm).catch(() => {
    throw new UsageError(`${o.module}: not a policy module compiled to WebAssembly`);
  });
  const entrypoints = Object.keys(module.entrypoints as Record<string, number>).sort();
  const entrypoint = o.entrypoint.endsWith('/decision') ? o.entrypoint : `${o.entrypoint}/decision`;
  if (!entrypoints.includes(entrypoint)) {
    throw new UsageError(`no entrypoint ${entrypoint} in ${o.module}; one of: ${entrypoints.join(', ')}`);
  }
  const results = module.evaluate(input, entrypoint) as Array<{ result?: unknown }>;
  return {
    entrypoint,
    revision: `sha256:${createHash('sha256').update(wasm).digest('hex')}`,
    result: results[0]?.result ?? null,
  };
}
