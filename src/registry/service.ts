import type { RegistryDeps } from './deps';
import { createRuntimeToken, installAgent, listTokens, removeToken, uninstallAgent } from './installs';
import { listAgents, readAgent, readRuntime, startRuntime, stopRuntime, updateAgent } from './runtime';

/** Installed agents of a pod: record, runtime tokens, runtime start/stop. */
export function createRegistryService(deps: RegistryDeps) {
  return {
    install: installAgent.bind(null, deps),
    uninstall: uninstallAgent.bind(null, deps),
    read: readAgent.bind(null, deps),
    list: listAgents.bind(null, deps),
    update: updateAgent.bind(null, deps),
    tokens: listTokens.bind(null, deps),
    createToken: createRuntimeToken.bind(null, deps),
    removeToken: removeToken.bind(null, deps),
    runtime: readRuntime.bind(null, deps),
    start: startRuntime.bind(null, deps),
    stop: stopRuntime.bind(null, deps),
  };
}

export type RegistryService = ReturnType<typeof createRegistryService>;
