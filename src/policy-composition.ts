import { readFile } from 'node:fs/promises';
import packageJson from '../package.json';
import type { Config } from './config';
import type { Clock } from './kernel/clock';
import { catalogue } from './kernel/decisions/catalogue';
import type { Logger } from './kernel/log';
import { pemBlocks } from './policy/bundles/verify';
import { DecisionLog } from './policy/decision-log';
import { PolicyEngine } from './policy/engine';
import { BundleFileSource, BundleHttpSource, WasmFileSource, type PolicySource } from './policy/sources';
import type { SpeedUps } from './speedups';

/** The `labels.version` of decision events: what package.json says this build is. */
const SERVICE_VERSION: string = packageJson.version;

/**
 * The policy engine and its decision log, from where the configuration says the policy comes.
 * Loaded (and watched) by the composition root. Part of the composition root.
 */
export async function composePolicy(input: { config: Config; log: Logger; clock: Clock; speedUps: SpeedUps }) {
  const { config, log, clock, speedUps } = input;
  const decisionLog = new DecisionLog({
    clock,
    mode: config.DECISION_LOG,
    sampleRate: config.DECISION_LOG_SAMPLE_RATE,
    // Decision events are an audit stream, not debug output: LOG_LEVEL does not silence them.
    log: log.child({ component: 'decisions' }, { level: 'info' }),
    lineWriter: speedUps.lineWriter,
    version: SERVICE_VERSION,
    upload: config.DECISION_LOG_URL
      ? {
          url: config.DECISION_LOG_URL,
          token: config.DECISION_LOG_TOKEN,
          bufferEvents: config.DECISION_LOG_BUFFER_EVENTS,
          bufferBytes: config.DECISION_LOG_BUFFER_BYTES,
          batchEvents: config.DECISION_LOG_BATCH_EVENTS,
          flushMs: config.DECISION_LOG_FLUSH_MS,
          timeoutMs: 10_000,
        }
      : undefined,
  });
  const policy = new PolicyEngine({
    source: await policySource(config),
    log: log.child({ component: 'policy' }),
    decisionLog,
    required: catalogue,
    validateInputs: config.NODE_ENV === 'test',
    jsonMemo: speedUps.jsonMemo(),
    evaluateText: speedUps.evaluateText,
  });
  return { policy, decisionLog };
}

/** The policy: an OPA bundle (file or server, signed in production) or, for development, the bare module. */
async function policySource(config: Config): Promise<PolicySource> {
  const production = config.NODE_ENV === 'production';
  const keyText = config.POLICY_BUNDLE_PUBLIC_KEY;
  const publicKeys = keyText ? pemBlocks(keyText.includes('-----BEGIN') ? keyText : await readFile(keyText, 'utf8')) : [];
  const signatures = { keys: { publicKeys, secret: config.POLICY_BUNDLE_SECRET }, required: production };
  const limits = {
    maxBytes: config.POLICY_BUNDLE_MAX_BYTES,
    allowRollback: config.POLICY_BUNDLE_ALLOW_ROLLBACK,
    minIssuedAt: config.POLICY_BUNDLE_MIN_ISSUED_AT,
  };
  if (config.POLICY_BUNDLE_URL) {
    return new BundleHttpSource(config.POLICY_BUNDLE_URL, signatures, {
      ...limits,
      pollMs: config.POLICY_BUNDLE_POLL_MS,
      timeoutMs: config.POLICY_BUNDLE_TIMEOUT_MS,
      token: config.POLICY_BUNDLE_TOKEN,
    });
  }
  if (config.POLICY_BUNDLE_PATH) return new BundleFileSource(config.POLICY_BUNDLE_PATH, signatures, limits);
  return new WasmFileSource(config.POLICY_WASM_PATH, production);
}
