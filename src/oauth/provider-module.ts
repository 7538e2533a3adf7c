import type NodeModule from 'node:module';
import type * as Jose from 'jose';
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

/**
 * A value (the configuration, a stored payload) as objects of Node's own realm: oidc-provider tells a plain object by its
 * constructor, and under a test runner's sandbox object literals have another realm's `Object`.
 * In the service both realms are one and this copies plain objects only.
 */
export function inHostRealm<T>(value: T): T {
  const HostObject = process.memoryUsage().constructor as ObjectConstructor;
  const copy = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(copy);
    if (item === null || typeof item !== 'object' || Object.getPrototypeOf(item)?.constructor?.name !== 'Object') return item;
    const out = new HostObject() as Record<string, unknown>;
    for (const [key, entry] of Object.entries(item)) out[key] = copy(entry);
    return out;
  };
  return copy(value) as T;
}

type JoseModule = typeof Jose;

let joseModule: JoseModule | undefined;

/** `jose` (JWT verification), an ES module only, loaded as `oidcProvider()` loads its package. */
export function jose(): JoseModule {
  const nodeModule = process.getBuiltinModule('node:module') as typeof NodeModule;
  joseModule ??= nodeModule.createRequire(__filename)('jose') as JoseModule;
  return joseModule;
}
