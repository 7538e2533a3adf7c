import type { Knex } from 'knex';
import type { Database } from '../db/database';

type Queryable = Database | Knex.Transaction;

/**
 * `github_app_installations`: which user an installation of a GitHub App is bound to. Only that
 * user may connect it; an installation nobody bound can back no connection.
 */
export interface InstallationBindingRow {
  app: string;
  external_installation_id: string;
  owner_id: string;
  bound_at: Date;
}

export function findBinding(db: Queryable, app: string, externalInstallationId: string): Promise<InstallationBindingRow | undefined> {
  return db<InstallationBindingRow>('github_app_installations').where({ app, external_installation_id: externalInstallationId }).first();
}

/** Binds, or confirms the same binding again; never moves an installation to another owner. */
export async function insertBinding(
  db: Queryable,
  row: Pick<InstallationBindingRow, 'app' | 'external_installation_id' | 'owner_id'>,
): Promise<void> {
  await db('github_app_installations').insert(row).onConflict(['app', 'external_installation_id']).ignore();
}
