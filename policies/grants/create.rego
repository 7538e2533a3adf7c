# METADATA
# title: Root grant creation
# description: |
#   Creating a root grant. The caller must own the connection: a
#   connection is visible to its owner alone, so someone else's is not found, exactly like an
#   unknown one (nothing tells that it exists). For the owner every refusal is reported at once.
#   Input: policies/schemas/grants/create.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.grants.create
package grants.create

import data.grants.scope
import data.lib.grants
import data.lib.org
import data.lib.resources

# ExpiresAt is in the future and at most 365 days away.
max_lifetime_ms := 365 * 86400000

# METADATA
# title: decision
# description: '`{allow, reasons, org, unmatchable_patterns}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {
	"allow": count(reasons) == 0,
	"reasons": sort(reasons),
	"org": org_findings,
	"unmatchable_patterns": sort(unmatchable_patterns),
} if {
	owns_connection
}

owns_connection if scope.is_connection_owner(input.caller, input.connection)

caller_is_member if input.caller.id in input.pod.members

target_allowed if {
	input.target.kind == "pod"
	input.pod.id == input.target.id
	caller_is_member
}

# A seat is an agent installed in a pod where the owner is a current member.
target_allowed if {
	input.target.kind == "seat"
	input.seat.id == input.target.id
	input.seat.pod_id == input.pod.id
	input.seat.id in input.pod.members
	caller_is_member
}

reasons contains "connection_kind_not_allowed" if input.connection.kind != "code_hosting_app"

reasons contains "connection_disconnected" if input.connection.status != "connected"

reasons contains "target_not_allowed" if not target_allowed

# Only a pod's current members may be listed; a seat grant's audience is the seat alone.
reasons contains "audience_not_member" if {
	target_allowed
	some id in input.request.audience
	not in_scope(id)
}

# A pattern that could only match values no check would ever match.
reasons contains "resource_pattern_invalid" if count(unmatchable_patterns) > 0

reasons contains "tool_not_enabled" if {
	some tool in input.request.tools
	not input.connection.tools[tool]
}

# A write tool under writeMode read would grant more than the mode says.
reasons contains "grant_widening" if grants.tools_beyond_mode(input.request.tools, input.request.write_mode, input.connection.tools)

reasons contains "expiry_out_of_range" if input.request.expires_at_ms <= input.now_ms

reasons contains "expiry_out_of_range" if input.request.expires_at_ms > input.now_ms + max_lifetime_ms

# The security team's own rules (lib.org): enforced denials, and approvals asked for.
reasons contains finding.reason if some finding in org_findings.denials

reasons contains "approval_required" if count(org_findings.approvals) > 0

org_findings := org.decision_findings("grants.create")

in_scope(id) if {
	input.target.kind == "pod"
	id in input.pod.members
}

in_scope(id) if {
	input.target.kind == "seat"
	id == input.target.id
}

unmatchable_patterns := resources.unmatchable_patterns(object.get(input.request, "resources", {}))
