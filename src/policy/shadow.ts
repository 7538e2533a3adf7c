import { Counter } from 'prom-client';
import type { OrgFindings } from '../kernel/decisions/org';
import type { Logger } from '../kernel/log';
import { metricsRegistry } from '../kernel/metrics';

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
 * explanation's `value` (a resource value the call named) cut like the input's resource values.
 */
export function loggableResult(
  result: { allow: boolean; org?: OrgFindings; explanation?: { value?: unknown } },
  cut: { maxChars: number; marker: string },
): object {
  const value = result.explanation?.value;
  const explained =
    typeof value === 'string' && value.length > cut.maxChars
      ? { ...result, explanation: { ...result.explanation, value: `${sliceChars(value, cut.maxChars)}${cut.marker}` } }
      : result;
  if (!explained.org) return explained;
  const strip = ({ package: pkg, reason }: { package: string; reason: string }) => ({ package: pkg, reason });
  return {
    ...explained,
    org: {
      denials: explained.org.denials.map(strip),
      approvals: explained.org.approvals.map(strip),
      shadow: explained.org.shadow.map((f) => ({ ...strip(f), effect: f.effect })),
    },
  };
}

/** The first `chars` UTF-16 units of `text`, never ending between the two halves of a pair. */
function sliceChars(text: string, chars: number): string {
  const last = text.charCodeAt(chars - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? chars - 1 : chars);
}
