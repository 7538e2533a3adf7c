import { decisions } from '../kernel/decisions/catalogue';
import type { Principal } from '../kernel/principals';
import { defineRoute, type CredentialAuthenticators, type Route } from '../kernel/route';
import { z } from '../kernel/schema';
import type { PolicyEngine } from '../policy/engine';
import { enforce } from '../policy/enforce';
import { shadowDisagreements } from '../policy/shadow';

const OrgPackage = z.object({
  decision: z.string().openapi({ example: 'broker.check' }),
  name: z.string().openapi({ example: 'protected_branches' }),
  mode: z.enum(['enforce', 'shadow', 'off']),
  shadowDisagreements: z.number().int().openapi({
    description:
      'Decisions this package, in shadow mode, would have refused while the policy allowed them (this replica, since it started)',
  }),
});

const PolicyStatus = z
  .object({
    revision: z.string().nullable(),
    source: z.string().openapi({ description: 'The module file, bundle file or bundle server the policy comes from' }),
    signature: z.enum(['verified', 'unsigned']).nullable().openapi({
      description:
        '`verified`: a bundle whose signature a configured key verified; `unsigned`: a bare module or an unsigned bundle (development); null: nothing loaded',
    }),
    lastError: z
      .object({ message: z.string(), at: z.string() })
      .nullable()
      .openapi({ description: 'The last refused load since the last good one' }),
    orgPackages: z.array(OrgPackage),
  })
  .openapi('PolicyStatus');

const principalId = (principal: Principal) =>
  principal.kind === 'human' ? principal.userId : principal.kind === 'agent' ? principal.agentId : principal.brokerId;

/** Shadow disagreements by package (`org.<decision>.<name>`), summed over their reasons. */
async function disagreementsByPackage(): Promise<Map<string, number>> {
  const counted = new Map<string, number>();
  for (const { labels, value } of (await shadowDisagreements.get()).values) {
    const name = String(labels.package ?? '');
    counted.set(name, (counted.get(name) ?? 0) + value);
  }
  return counted;
}

/** What the console's policy page shows: the `policy/status` decision says who reads it. */
export function policyStatusRoutes(policy: PolicyEngine, auth: CredentialAuthenticators): Route[] {
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/policy/status',
        operationId: 'getPolicyStatus',
        tag: 'Operations',
        summary:
          'The policy serving now: revision, source, signature, org packages with their modes, shadow disagreements, last load error',
        description: 'People signed in (the `policy/status` decision); agents and brokers get 404.',
        auth: auth.credentials('human', 'agent', 'broker'),
        success: { status: 200, description: 'The policy status', schema: PolicyStatus },
        errors: ['not_found'],
      },
      async ({ principal }) => {
        const decision = policy.evaluate(decisions.policyStatus, { caller: { kind: principal.kind, id: principalId(principal) } });
        enforce(decision);
        const disagreements = await disagreementsByPackage();
        const orgPackages = Object.entries(decision.org_modes)
          .flatMap(([decisionName, packages]) =>
            Object.entries(packages).map(([name, mode]) => ({
              decision: decisionName,
              name,
              mode,
              shadowDisagreements: disagreements.get(`org.${decisionName}.${name}`) ?? 0,
            })),
          )
          .sort((a, b) => a.decision.localeCompare(b.decision) || a.name.localeCompare(b.name));
        const signed = policy.signed;
        return {
          body: {
            revision: policy.revision ?? null,
            source: policy.source.location,
            signature: signed === undefined ? null : signed ? ('verified' as const) : ('unsigned' as const),
            lastError: policy.lastFailure ?? null,
            orgPackages,
          },
        };
      },
    ),
  ];
}
