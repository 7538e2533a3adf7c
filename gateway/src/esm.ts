import type NodeModule from 'node:module';
import type * as Jose from 'jose';

type JoseModule = typeof Jose;

let joseModule: JoseModule | undefined;

/**
 * `jose`, which ships as an ES module only, through Node's own `require` (which loads ES modules
 * synchronously on the Node versions the gateway supports), taken from the built-in module so a
 * test runner's own loader never stands in for it.
 */
export function jose(): JoseModule {
  const nodeModule = process.getBuiltinModule('node:module') as typeof NodeModule;
  joseModule ??= nodeModule.createRequire(__filename)('jose') as JoseModule;
  return joseModule;
}
