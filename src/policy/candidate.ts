import { loadPolicy, type LoadedPolicy } from '@open-policy-agent/opa-wasm';
import type { DecisionDefinition, DecisionInput, DecisionOutput } from '../kernel/decisions/define';
import { artifactOf, untar } from './bundles/read';
import { maxUnpackedBytes } from './bundles/limits';
import { PolicyLoadError } from './load-error';

/**
 * One decision on a loaded module, its answer held to the decision's output schema. Nothing is
 * logged and no shadow finding reported: what the policy playground asks is a question, not a
 * decision anything acts on.
 */
export function evaluateOn<D extends DecisionDefinition>(policy: LoadedPolicy, decision: D, input: DecisionInput<D>): DecisionOutput<D> {
  const results = policy.evaluate(input, decision.entrypoint) as Array<{ result?: unknown }>;
  const parsed = decision.output.safeParse(results[0]?.result);
  if (!parsed.success) throw new PolicyLoadError('missing_entrypoints', `the decision breaks its output schema: ${parsed.error.message}`);
  return parsed.data as DecisionOutput<D>;
}

export interface CandidatePolicy {
  revision: string;
  signed: false;
  evaluate<D extends DecisionDefinition>(decision: D, input: DecisionInput<D>): DecisionOutput<D>;
}

/**
 * A bundle uploaded to be tried, never served: bounded as the bundle loader bounds what it fetches
 * (the bundle at POLICY_BUNDLE_MAX_BYTES, what it unpacks to at four times that), opened and
 * loaded in memory for one request. Its signature is not asked for: it decides nothing.
 */
export async function openCandidate(bundle: Buffer, maxBytes: number, entrypoint: string): Promise<CandidatePolicy> {
  if (bundle.length > maxBytes) throw new PolicyLoadError('too_large', `the bundle is over ${maxBytes} bytes`);
  let files: Map<string, Buffer>;
  try {
    files = await untar(bundle, maxUnpackedBytes(maxBytes));
  } catch (error) {
    if (error instanceof PolicyLoadError) throw error;
    throw new PolicyLoadError('invalid_bundle', `not an OPA bundle (.tar.gz): ${(error as Error).message}`);
  }
  const artifact = artifactOf(files);
  let policy: LoadedPolicy;
  try {
    policy = await loadPolicy(artifact.wasm);
    if (artifact.data) policy.setData(artifact.data);
  } catch (error) {
    throw new PolicyLoadError('invalid_module', `not a loadable policy module: ${(error as Error).message}`);
  }
  if (!(entrypoint in policy.entrypoints)) throw new PolicyLoadError('missing_entrypoints', `the module lacks ${entrypoint}`);
  return { revision: artifact.revision, signed: false, evaluate: (decision, input) => evaluateOn(policy, decision, input) };
}
