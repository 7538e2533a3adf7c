import type { Database } from '../../db/database';
import type { RouteMap } from './route-map';

/** The SQL of broker_routes: each broker's route map, one JSON document. */

export async function routesOf(db: Database, brokerId: string): Promise<RouteMap> {
  const row = await db('broker_routes').where({ broker_id: brokerId }).first('routes');
  return (row?.routes as RouteMap | undefined) ?? [];
}

export async function replaceRoutes(db: Database, brokerId: string, routes: RouteMap, now: Date): Promise<void> {
  await db('broker_routes')
    .insert({ broker_id: brokerId, routes: JSON.stringify(routes), updated_at: now })
    .onConflict('broker_id')
    .merge(['routes', 'updated_at']);
}
