import { decisions, type DecisionInput, type DecisionOutput } from '../kernel/decisions/catalogue';
import { ApiError } from '../kernel/errors';
import type { Principal } from '../kernel/principals';
import type { FormBody } from '../kernel/route';
import { openCandidate } from '../policy/candidate';
import { enforce } from '../policy/enforce';
import { MASK } from '../policy/decision-log';
import { PolicyLoadError } from '../policy/load-error';
import type { PlaygroundDeps } from './deps';

type CheckInput = DecisionInput<typeof decisions.brokerCheck>;
type CheckOutput = DecisionOutput<typeof decisions.brokerCheck>;

/** `policy/playground` decides: security admins, else 404. */
async function authorize(deps: PlaygroundDeps, principal: Principal): Promise<void> {
  const human = principal.kind === 'human' ? principal.userId : null;
  const id = principal.kind === 'human' ? principal.userId : principal.kind === 'agent' ? principal.agentId : principal.brokerId;
  const decision = deps.policy.evaluate(decisions.policyPlayground, {
    caller: {
      kind: principal.kind,
      id,
      named_security_admin: human !== null && deps.securityAdmins.includes(human),
      pod_admin: human !== null && (await deps.isPodAdmin(human)),
    },
  });
  enforce(decision);
}

/** The newest broker checks this replica logged, to try again. */
export async function recentChecks(deps: PlaygroundDeps, principal: Principal, limit: number) {
  await authorize(deps, principal);
  return {
    items: deps.recentChecks(limit).map((event) => {
      const input = event.input as { tool?: { name?: string }; chain?: Array<{ id?: string }> };
      const result = event.result as { allow?: boolean; reason?: string };
      return {
        decisionId: event.decision_id,
        at: event.timestamp,
        revision: event.bundles.policy.revision,
        tool: input.tool?.name ?? null,
        grantId: input.chain?.[0]?.id ?? null,
        allow: result.allow === true,
        reason: result.reason ?? null,
        input: event.input as Record<string, unknown>,
      };
    }),
  };
}

function outcomeOf(revision: string, output: CheckOutput) {
  return {
    revision,
    allow: output.allow,
    reason: output.reason ?? (output.allow ? 'allowed' : (output.reasons[0] ?? 'not_found')),
    reasons: output.reasons,
    ...(output.explanation ? { explanation: output.explanation } : {}),
    orgDenials: output.org?.denials ?? [],
    shadow: output.org?.shadow ?? [],
  };
}

const invalid = (path: string, message: string) =>
  new ApiError('invalid_request', `the ${path} is invalid`, { errors: [{ path, message }] });

/**
 * One broker check input against the serving policy and, when a bundle is sent, a candidate: both
 * answers side by side. Nothing is charged, recorded or logged: no budget script runs, no call
 * record or decision event is written; the route reads and answers.
 */
export async function tryCheck(deps: PlaygroundDeps, principal: Principal, form: FormBody) {
  await authorize(deps, principal);
  const text = form.fields.input;
  if (text === undefined) throw invalid('body.input', 'the check input, as JSON');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid('body.input', 'not JSON (or nested too deep)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalid('body.input', 'a JSON object');
  const argsMasked = (parsed as { args?: unknown }).args === MASK;
  const input = (argsMasked ? { ...parsed, args: {} } : parsed) as CheckInput;

  const serving = deps.policy.tryOut(decisions.brokerCheck, input);
  let candidate: ReturnType<typeof outcomeOf> | null = null;
  const bundle = form.files.bundle;
  if (bundle) {
    try {
      const loaded = await openCandidate(bundle, deps.maxBundleBytes, decisions.brokerCheck.entrypoint);
      candidate = outcomeOf(loaded.revision, loaded.evaluate(decisions.brokerCheck, input));
    } catch (error) {
      if (error instanceof PolicyLoadError && error.kind === 'too_large') throw new ApiError('payload_too_large', error.message);
      if (error instanceof PolicyLoadError) throw invalid('body.bundle', error.message);
      throw invalid('body.bundle', 'the candidate could not evaluate this input');
    }
  }
  const shown = outcomeOf(serving.revision, serving.output);
  return {
    serving: shown,
    candidate,
    same: candidate === null || (candidate.allow === shown.allow && candidate.reason === shown.reason),
    argsMasked,
  };
}
