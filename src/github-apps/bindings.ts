import type { Database } from '../db/database';
import { decisions } from '../kernel/decisions/catalogue';
import type { PolicyEngine } from '../policy/engine';
import { enforce } from '../policy/enforce';
import { findBinding, insertBinding } from './repository';
import type { GitHubApps } from './settings';

/** What other domains read of bindings (github-apps/repository.ts is this folder's own). */
export async function bindingOf(db: Database, app: string, externalInstallationId: string): Promise<{ owner_id: string } | undefined> {
  const row = await findBinding(db, app, externalInstallationId);
  return row && { owner_id: row.owner_id };
}

/**
 * The operator binds an installation of a configured app to the one user who may connect it
 * (connections.access decides: the operator alone, and never over another owner's binding).
 * Binding the same owner again changes nothing.
 */
export async function bindInstallation(
  deps: { db: Database; policy: PolicyEngine; apps: GitHubApps },
  binding: { app: string; externalInstallationId: string; ownerId: string },
): Promise<{ app: string; externalInstallationId: string; ownerId: string }> {
  const decide = (current: { owner_id: string } | undefined) =>
    enforce(
      deps.policy.evaluate(decisions.connectionsAccess, {
        action: 'installation.bind',
        caller: { kind: 'operator', id: 'admin' },
        app: { name: binding.app, configured: deps.apps.has(binding.app) },
        owner_id: binding.ownerId,
        ...(current ? { binding: current } : {}),
      }),
    );
  decide(await bindingOf(deps.db, binding.app, binding.externalInstallationId));
  await insertBinding(deps.db, { app: binding.app, external_installation_id: binding.externalInstallationId, owner_id: binding.ownerId });
  // A concurrent bind to someone else may have won the insert: what is stored now decides.
  decide(await bindingOf(deps.db, binding.app, binding.externalInstallationId));
  return binding;
}
