/**
 * Every error the API returns, by stable code. Policy reasons use the same codes,
 * so this table is the one place that says which HTTP status a refusal gets.
 */
export const PROBLEMS = {
  invalid_request: { status: 400, title: 'The request is malformed' },
  server_derived_field: { status: 400, title: 'A server-derived field was supplied' },
  resource_pattern_invalid: { status: 400, title: 'A resource pattern could only match values that are not canonical' },
  webhook_url_invalid: { status: 400, title: 'The webhook URL is not an absolute http(s) URL without credentials or fragment' },
  webhook_target_not_allowed: {
    status: 400,
    title: 'The webhook host does not resolve to public addresses (WEBHOOK_ALLOW_PRIVATE allows private ones)',
  },
  unauthenticated: { status: 401, title: 'Authentication is required' },
  subject_token_invalid: { status: 401, title: 'The forwarded subjectToken is invalid, expired or revoked' },
  credential_not_accepted: { status: 403, title: 'This kind of credential is not accepted here' },
  not_connection_owner: { status: 403, title: 'Only the connection owner may do this' },
  not_installed_agent: { status: 403, title: 'Only an agent installed in the pod may do this' },
  principal_not_in_audience: { status: 403, title: "The caller is not in the grant's effective audience" },
  subject_mismatch: { status: 403, title: 'The named subject is not the principal of the forwarded token' },
  principal_assertion_refused: { status: 403, title: "A broker may not assert the principal; forward the caller's subjectToken" },
  org_policy_denied: { status: 403, title: "An org policy of the security team refuses this; `reasons` name the policy's own codes" },
  approval_required: { status: 403, title: 'An org policy requires a human approval, which this request cannot carry' },
  self_approval: { status: 403, title: 'Nobody approves their own call' },
  not_pod_admin: { status: 403, title: 'Only owners and admins of the pod may do this' },
  owner_role_required: { status: 403, title: 'Only an owner of the pod may do this' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  approval_already_decided: { status: 409, title: 'The approval is already decided' },
  approval_expired: { status: 409, title: 'The approval expired before it was decided' },
  outcome_already_recorded: { status: 409, title: 'The outcome of this call is already recorded' },
  call_denied: { status: 409, title: 'The call was denied; a denied call takes no outcome' },
  outcome_too_late: { status: 409, title: 'The call was checked more than 24 days ago; its outcome is no longer taken' },
  not_in_checkpoint: { status: 409, title: 'No signed checkpoint of the trail covers this yet, or none has that size' },
  not_provable: {
    status: 409,
    title:
      'The trail can no longer prove this: a leaf it needs has no record and no kept hash (a record deleted, or a day dropped out of turn)',
  },
  runtime_stopped: { status: 409, title: "The agent's runtime is stopped" },
  member_exists: { status: 409, title: 'The identity is already a member of the pod' },
  agent_exists: { status: 409, title: 'An agent with this name is already installed in the pod' },
  last_owner: { status: 409, title: 'A pod must keep at least one owner' },
  payload_too_large: { status: 413, title: 'The request body is larger than 64 KiB' },
  unsupported_media_type: { status: 415, title: 'The request body must be application/json' },
  rate_limited: { status: 429, title: 'Too many requests of this kind; retry after the Retry-After header' },
  headers_too_large: { status: 431, title: 'The request headers are larger than 16 KiB' },
  tool_not_enabled: { status: 422, title: 'A tool is not enabled for the connection' },
  target_not_allowed: { status: 422, title: 'The target is not allowed' },
  audience_not_member: { status: 422, title: 'An audience identity is not a current member of the pod' },
  grant_widening: { status: 422, title: 'The grant would widen what its parent or its write mode allows' },
  grant_not_usable: { status: 422, title: 'The grant is not usable' },
  delegation_too_deep: { status: 422, title: 'The delegation chain is too deep' },
  too_many_children: { status: 422, title: 'The grant already has as many live children as allowed (MAX_LIVE_CHILDREN_PER_GRANT)' },
  too_many_webhooks: { status: 422, title: 'The pod already has as many webhooks as allowed (WEBHOOK_MAX_PER_POD)' },
  connection_kind_not_allowed: { status: 422, title: 'Root grants accept only code-hosting app connections' },
  connection_disconnected: { status: 422, title: 'The connection is disconnected' },
  expiry_out_of_range: { status: 422, title: 'expiresAt must be in the future and at most 365 days away' },
  unknown_app: { status: 422, title: 'No GitHub App of that name is configured' },
  installation_not_bound: {
    status: 422,
    title: 'The app installation is not bound to the caller: an operator binds it to its owner first',
  },
  installation_bound_to_another_owner: { status: 409, title: 'The app installation is already bound to another owner' },
  credential_unavailable: {
    status: 503,
    title: 'No credential could be minted for the call; nothing was allowed',
    // 422 for a connection or tool that cannot have one (no app, no repository, no permissions).
    alsoStatus: 422,
  },
  internal_error: { status: 500, title: 'Internal server error' },
  dependency_unavailable: { status: 503, title: 'A dependency is unavailable; nothing was allowed' },
  invalidation_pending: {
    status: 503,
    title: 'The change is committed but not yet confirmed on every replica; repeat the request to confirm it',
  },
} as const satisfies Record<string, { status: number; title: string; alsoStatus?: number }>;

export type ProblemCode = keyof typeof PROBLEMS;

export interface FieldError {
  path: string;
  message: string;
}

/** Thrown anywhere; the error middleware renders it as application/problem+json. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    readonly detail?: string,
    readonly extensions: { errors?: FieldError[]; reasons?: string[] } = {},
    readonly headers: Record<string, string> = {},
    /** The code's other status, for the few codes the table gives two. */
    status?: number,
  ) {
    super(detail ?? PROBLEMS[code].title);
    const problem: { status: number; alsoStatus?: number } = PROBLEMS[code];
    this.status = status !== undefined && status === problem.alsoStatus ? status : problem.status;
  }
}

export function isProblemCode(value: string): value is ProblemCode {
  return Object.hasOwn(PROBLEMS, value);
}
