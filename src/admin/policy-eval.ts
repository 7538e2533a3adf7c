import { readFile } from 'node:fs/promises';
import { catalogue } from '../kernel/decisions/catalogue';
import { createLogger } from '../kernel/log';
import { PolicyEngine } from '../policy/engine';

/**
 * `policy eval`: one decision of the built module on an input file, the way the service asks it,
 * for a security engineer trying a rule (README "Write your own rule"). The input is checked
 * against the decision's schema first, so a typo is named instead of silently denying.
 * Needs neither Postgres nor Redis.
 */
export async function evaluatePolicyFile(options: { entrypoint: string; inputFile: string; modulePath: string }) {
  const decision = catalogue.find((d) => d.entrypoint === options.entrypoint);
  if (!decision) {
    throw new UsageError(`no decision ${options.entrypoint}; one of: ${catalogue.map((d) => d.entrypoint).join(', ')}`);
  }
  let input: unknown;
  try {
    input = JSON.parse(await readFile(options.inputFile, 'utf8'));
  } catch (error) {
    throw new UsageError(`${options.inputFile}: ${(error as Error).message}`);
  }
  const checked = decision.input.safeParse(input);
  if (!checked.success) {
    const problems = checked.error.issues.map((issue) => `  ${issue.path.join('.') || '(input)'}: ${issue.message}`);
    throw new UsageError(`${options.inputFile} is not an input of ${decision.entrypoint} (policies/schemas):\n${problems.join('\n')}`);
  }
  const engine = new PolicyEngine({ path: options.modulePath, log: createLogger('silent'), decisionLog: 'off' });
  if (!(await engine.reload())) throw new UsageError(`${options.modulePath}: not a loadable policy module (npm run build:policy)`);
  const result = engine.evaluate(decision, checked.data as never);
  return { entrypoint: decision.entrypoint, revision: engine.revision, result };
}

/** A mistake of the caller's: printed as is, exit status 2. */
export class UsageError extends Error {}
