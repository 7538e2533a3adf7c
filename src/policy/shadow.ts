import { Counter } from 'prom-client';
import type { OrgFindings } from '../kernel/decisions/org';
import type { Logger } from '../kernel/log';
import { metricsRegistry } from '../kernel/metrics';
import { RESOURCE_VALUE_MAX_CHARS, TRUNCATED } from './decision-log';

export const shadowDisagreements = new Counter({
  name: 'policy_shadow_disagreements_total',
  help: 'Decisions an org package in shadow mode would have refused (deny or require approval) while the policy allowed them',
  labelNames: ['package', 'reason'],
  registers: [metricsRegistry],
});

/**
 * Reports what org packages in shadow mode would have done: every shadow finding
 * is logged with the decision id, and counted as a disagreement when the enforced decision
 * allowed what the package would have refused. Never enforced. Messages are not logged: an org
 * author could have quoted the call's arguments in one.
 */
export function reportShadow(log: Logger, decisionId: string, entrypoint: string, allowed: boolean, org: OrgFindings | undefined): void {
  for (const finding of org?.shadow ?? []) {
    if (allowed) shadowDisagreements.labels(finding.package, finding.reason).inc();
    log.info(
      { decision_id: decisionId, entrypoint, package: finding.package, effect: finding.effect, reason: finding.reason, disagrees: allowed },
      'org policy in shadow mode',
    );
  }
}

/**
 * A decision as the decision log keeps it: org findings without their messages, and an
 * explanation's `value` (a resource the call named, as long as a caller makes it) cut as the
 * input's resource values are.
 */
export function loggableResult(result: { allow: boolean; org?: OrgFindings; explanation?: { value?: string } }): object {
  const value = result.explanation?.value;
  if (value !== undefined && value.length > RESOURCE_VALUE_MAX_CHARS) {
    result = { ...result, explanation: { ...result.explanation, value: `${value.slice(0, RESOURCE_VALUE_MAX_CHARS)}${TRUNCATED}` } };
  }
  if (!result.org) return result;
  const strip = ({ package: pkg, reason }: { package: string; reason: string }) => ({ package: pkg, reason });
  return {
    ...result,
    org: {
      denials: result.org.denials.map(strip),
      approvals: result.org.approvals.map(strip),
      shadow: result.org.shadow.map((f) => ({ ...strip(f), effect: f.effect })),
    },
  };
}
