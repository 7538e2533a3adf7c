# METADATA
# title: Broker pre-call check
# description: |
#   Decides one tool call through a grant before the budget is consulted.
#   Input: policies/schemas/broker/check.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
#   The decision also names the one `reason` the broker reports: the first of `precedence`.
#   `not_found`, `subject_token_invalid` and `principal_assertion_refused` are refusals (404, 401,
#   403: nothing is recorded); every other reason is a recorded deny.
# schemas:
#   - input: schema.broker.check
package broker.check

import data.broker.ownership
import data.lib.grants
import data.lib.org
import data.lib.resources

# Which reason a denial reports when several hold: refusals of the request first, then the
# grant's own state, then the tool, then who is calling.
precedence := [
	"subject_token_invalid",
	"principal_assertion_refused",
	"revoked",
	"expired",
	"connection_disconnected",
	"tool_not_allowed",
	"write_not_allowed",
	"resource_invalid",
	"resource_unknown",
	"resource_not_allowed",
	"principal_not_in_audience",
	"runtime_stopped",
	"approval_mismatch",
	"approval_denied",
	"approval_used",
	"approval_expired",
	"approval_pending",
]

# METADATA
# title: decision
# description: |
#   `{allow, reasons, reason, org, labels, explanation?}`: reasons are the core deny reasons,
#   those of enforced org rules, and `approval_required` when one of them asks for approval; `org`
#   holds the org findings (lib.org), shadow ones included; `labels` what enforced org rules label
#   an allowed call with (kept on the tree by the budget script), `shadow_labels` those of shadow
#   packages (logged, never kept); `exact_calls` that an enforced rule reads the count of the tool
#   called; a refusal explains its reason (explanations.rego).
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"], "reason": "not_found"}

decision := object.union(
	{
		"allow": count(reasons) == 0,
		"reasons": sort(reasons),
		"reason": reason,
		"org": org_findings,
		"consumes_approval": approved,
		"labels": kept_labels,
		"shadow_labels": session_labels.shadow,
		"exact_calls": input.tool.name in org.counted_tools("broker.check"),
	},
	explained,
) if {
	ownership.owned_by(input.chain[0], input.broker_id)
}

org_findings := org.decision_findings("broker.check")

session_labels := org.decision_labels("broker.check")

# Only an allowed call labels its tree.
default kept_labels := []

kept_labels := session_labels.enforced if count(reasons) == 0

reason := "allowed" if count(reasons) == 0

reason := org.ordered_reasons(precedence, reasons, org_findings)[0] if count(reasons) > 0

chain_status := grants.status(input.chain, input.now_ms)

# The forwarded subjectToken did not verify: there is nobody to check the call for.
reasons contains "subject_token_invalid" if not input.principal

# A principal the broker merely asserts is taken only where the deployment trusts its brokers.
reasons contains "principal_assertion_refused" if {
	input.principal_source == "asserted"
	not input.trust_asserted_principal
}

reasons contains "revoked" if chain_status == "revoked"

reasons contains "expired" if chain_status == "expired"

reasons contains "connection_disconnected" if input.connection.status != "connected"

# Every level must allow the tool: a child never widens its parent, even if one was stored wider.
reasons contains "tool_not_allowed" if {
	some grant in input.chain
	not input.tool.name in grant.tools
}

# The connection must enable the tool: `tool.access` is its access there, absent when it does not.
reasons contains "tool_not_allowed" if not input.tool.access

reasons contains "tool_not_allowed" if not input.connection.tools[input.tool.name]

reasons contains "write_not_allowed" if {
	some grant in input.chain
	grants.tool_beyond_mode(input.tool.access, grant.write_mode)
}

# A value the tool names is matched only when canonical, whatever the chain's
# patterns: a connector would send it on, and a code host normalise it, somewhere else.
reasons contains "resource_invalid" if resources.invalid(input.resource)

# Every level of the chain must allow the call's resources.
reasons contains "resource_unknown" if {
	some constraint in chain_constraints
	resources.unknown(constraint, input.resource)
}

reasons contains "resource_not_allowed" if {
	some constraint in chain_constraints
	resources.not_allowed(constraint, input.resource)
}

reasons contains "principal_not_in_audience" if {
	some grant in input.chain

	# No membership fact means no membership: a missing fact can only deny.
	members := object.get(object.get(input, "members", {}), grant.target.pod_id, [])
	not input.principal.id in grants.effective_audience(grant, members)
}

# The kill switch: a stopped agent makes no calls, whatever its grants say.
reasons contains "runtime_stopped" if {
	input.principal.kind == "agent"
	input.runtime.desired_state == "stopped"
}

# The security team's own rules (lib.org): enforced denials, and approvals asked for.
reasons contains finding.reason if some finding in org_findings.denials

# A write tool under `approve` at any level, or an org rule, needs a human's approval
# of this very call; a re-sent check brings it, and it must be this call's and still good.
reasons contains "approval_required" if {
	needs_approval
	not input.approval
}

reasons contains "approval_mismatch" if {
	input.approval
	not approval_matches
}

reasons contains "approval_denied" if {
	approval_matches
	input.approval.state == "denied"
}

reasons contains "approval_used" if {
	approval_matches
	input.approval.state == "used"
}

reasons contains "approval_expired" if {
	approval_matches
	input.approval.state in {"pending", "approved"}
	input.approval.expires_at_ms <= input.now_ms
}

reasons contains "approval_pending" if {
	approval_matches
	input.approval.state == "pending"
	input.approval.expires_at_ms > input.now_ms
}

needs_approval if {
	input.tool.access == "write"
	some grant in input.chain
	grant.write_mode == "approve"
}

needs_approval if count(org_findings.approvals) > 0

# Bound to the call: the same grant, tool, principal and arguments (by their digest).
approval_matches if {
	input.approval.found
	input.approval.grant_id == input.chain[0].id
	input.approval.tool == input.tool.name
	input.approval.principal == input.principal
	input.approval.args_digest == input.args_digest
}

default approved := false

approved if {
	approval_matches
	input.approval.state == "approved"
	input.approval.expires_at_ms > input.now_ms
}

chain_constraints := resources.constraints(input.chain)
