import { CredentialUnavailableError, type MintedCredential } from '../../github-apps/installation-tokens';
import { ApiError } from '../../kernel/errors';
import type { BrokerDeps } from '../deps';
import { resourceOf } from '../policy-input';
import type { Resolved, Verdict } from './stages';

export type CredentialDeps = Pick<BrokerDeps, 'reads' | 'tokens'>;

/** What a check that asked for a credential has for it: a token, none needed, or a failed mint. */
export type Minted = { kind: 'none' } | { kind: 'minted'; credential: MintedCredential } | { kind: 'failed'; detail: string };

// The shape the token request is built from (owner, then name): not an authorization rule (the
// policy has already allowed the call), but a token must never be asked for a string it would
// have to guess at, such as `acme/api/extra`.
const CANONICAL_REPOSITORY = /^(?!\.\.?\/)[A-Za-z0-9_.-]{1,100}\/(?!\.\.?$)[A-Za-z0-9_.-]{1,100}$/;

const unavailable = (detail: string) => new ApiError('credential_unavailable', detail, {}, {}, 422);

/**
 * Between decide and charge, for a check sent with `credential: true`. A connection or tool that
 * cannot have a credential is the request's fault (422), whatever the verdict; an allowed call is
 * then given an installation token for exactly its repository and the tool's permissions. A mint
 * that fails is returned, not thrown: the check records the refusal and answers 503 without
 * taking a unit (see `refuseWithoutCredential`). Runs after decide, so another broker's grant
 * has already been a 404.
 */
export async function credentialFor(deps: CredentialDeps, call: Resolved, verdict: Verdict): Promise<Minted> {
  if (!call.request.credential) return { kind: 'none' };
  const connectionId = call.chain[0]!.connection_id;
  const source = await deps.reads.credentialSourceOf(connectionId, call.request.tool);
  if (!source) throw unavailable('the connection names no GitHub App: its calls get no credential');
  if (!source.permissions) throw unavailable('the tool declares no permissions: its calls get no credential');
  if (verdict.kind !== 'allow') return { kind: 'none' };
  const { repository } = resourceOf(
    call.request.args,
    Object.hasOwn(call.facts.toolResources, call.request.tool) ? call.facts.toolResources[call.request.tool] : undefined,
  );
  if (repository === undefined || !CANONICAL_REPOSITORY.test(repository)) {
    throw unavailable('the call names no repository (owner/name) for its credential to be narrowed to');
  }
  try {
    const credential = await deps.tokens.mint({
      app: source.app,
      installationId: source.installationId,
      repository,
      permissions: source.permissions,
    });
    return { kind: 'minted', credential };
  } catch (error) {
    if (error instanceof CredentialUnavailableError) return { kind: 'failed', detail: error.message };
    throw error;
  }
}
