import type NodeModule from 'node:module';
import type ProviderClass from 'oidc-provider';
import type { errors as OidcErrors, interactionPolicy as OidcInteractionPolicy } from 'oidc-provider';

export interface OidcProviderModule {
  default: typeof ProviderClass;
  errors: typeof OidcErrors;
  interactionPolicy: typeof OidcInteractionPolicy;
}

let loaded: OidcProviderModule | undefined;

/**
 * The `oidc-provider` package. It ships as an ES module only; the service is CommonJS, so Node's
 * own `require` loads it (Node loads ES modules synchronously there) — taken from the built-in
 * module itself, so a test runner that replaces `require` with a loader of its own (which cannot
 * load ES modules) still gets Node's.
 */
export function oidcProvider(): OidcProviderModule {
  const nodeModule = process.getBuiltinModule('node:module') as typeof NodeModule;
  loaded ??= nodeModule.createRequire(__filename)('oidc-provider') as OidcProviderModule;
  return loaded;
}
