import { readFile } from 'node:fs/promises';
import type { Database } from '../db/database';
import { replaceRoutes } from '../protocols/ext-authz/repository';
import { RouteMapBody } from '../protocols/ext-authz/route-map';
import { UsageError } from './policy-eval';

/**
 * `broker routes --id brk_… --file routes.json`: the route map `PUT /api/brokers/:brokerId/routes`
 * takes, judged by the same schema, put for the broker. Prints how many routes are in force.
 */
export async function putBrokerRoutes(
  db: Database,
  brokerId: string,
  file: string,
  now: Date,
): Promise<{ brokerId: string; routes: number }> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`${file}: not readable JSON (${(error as Error).message})`);
  }
  const checked = RouteMapBody.safeParse(parsed);
  if (!checked.success) {
    const problems = checked.error.issues.map((issue) => `${['routes', ...issue.path.slice(1)].join('.')}: ${issue.message}`);
    throw new UsageError(`${file}: not a route map:\n  ${problems.join('\n  ')}`);
  }
  try {
    await replaceRoutes(db, brokerId, checked.data.routes, now);
  } catch (error) {
    // The broker is a foreign key: an unknown one is the operator's typo, not a failure.
    if ((error as { code?: string }).code === '23503') throw new UsageError(`no broker ${brokerId}`);
    throw error;
  }
  return { brokerId, routes: checked.data.routes.length };
}
