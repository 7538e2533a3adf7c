import { defineRoute, type CredentialAuthenticators, type FormBody, type Route } from '../kernel/route';
import type { PlaygroundDeps } from './deps';
import { PlaygroundAnswer, RecentCheck, RecentQuery } from './schemas';
import { recentChecks, tryCheck } from './service';
import { z } from '../kernel/schema';

const tag = 'Operations';
const INPUT_MAX_BYTES = 64 * 1024;

/** The console's policy playground: security admins only (the `policy/playground` decision). */
export function playgroundRoutes(deps: PlaygroundDeps, auth: CredentialAuthenticators): Route[] {
  return [
    defineRoute(
      {
        method: 'get',
        path: '/api/policy/playground/recent',
        operationId: 'listRecentChecks',
        tag,
        summary: "The newest broker checks this replica's decision log kept, to try again in the playground",
        description:
          'Security admins (`policy/playground`: an owner or admin of any pod, or a person in SECURITY_ADMINS); anyone else gets ' +
          '404. Newest first, at most 50, kept in memory by each replica (so another replica lists its own), `args` masked as ' +
          'logged; none when DECISION_LOG is off.',
        auth: auth.credentials('human', 'agent', 'broker'),
        query: RecentQuery,
        success: { status: 200, description: 'Recent checks', schema: z.object({ items: z.array(RecentCheck) }) },
        errors: ['not_found'],
      },
      async ({ principal, query }) => ({ body: await recentChecks(deps, principal, query.limit) }),
    ),
    defineRoute(
      {
        method: 'post',
        path: '/api/policy/playground',
        operationId: 'tryPolicy',
        tag,
        summary: 'Evaluate one broker check input against the serving policy and, optionally, a candidate bundle, side by side',
        description:
          "Security admins only (else 404). A multipart form: `input`, the check input as JSON (a recent check's, or pasted), and " +
          'optionally `bundle`, an OPA bundle (.tar.gz) bounded as the policy bundle loader bounds one (POLICY_BUNDLE_MAX_BYTES, ' +
          'unpacking to at most four times that; past it 413). Read-only: no budget is charged, no call record or decision event ' +
          'is written, and the candidate is dropped with the answer; its signature is not asked for, as it serves nothing.',
        auth: auth.credentials('human', 'agent', 'broker'),
        form: {
          fields: {
            input: { maxBytes: INPUT_MAX_BYTES, description: 'The broker check input (policies/schemas/broker/check.json), as JSON' },
          },
          files: {
            bundle: {
              maxBytes: deps.maxBundleBytes,
              description: 'A candidate OPA bundle (.tar.gz) with the broker/check/decision entrypoint, at most POLICY_BUNDLE_MAX_BYTES',
            },
          },
        },
        success: { status: 200, description: 'Both answers', schema: PlaygroundAnswer },
        errors: ['not_found'],
      },
      async ({ principal, body }) => ({ body: await tryCheck(deps, principal, body as unknown as FormBody) }),
    ),
  ];
}
