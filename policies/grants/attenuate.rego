# METADATA
# title: Grant attenuation
# description: |
#   An installed agent narrows a usable grant into a child. The
#   calling seat must be in the parent's effective audience, its runtime not stopped, the parent
#   active with its connection connected, and the chain not too deep. The child may not widen
#   anything; `widened` names every field that would (in request-body spelling).
#   Input: policies/schemas/grants/attenuate.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
#   The child is the request with every omitted field inherited from the parent.
# schemas:
#   - input: schema.grants.attenuate
package grants.attenuate

import data.grants.scope
import data.lib.grants
import data.lib.org
import data.lib.resources

parent := input.grant.chain[0]

child := input.child

parent_audience := grants.effective_audience(parent, input.grant.members)

# METADATA
# title: decision
# description: |
#   `{allow, reasons, widened, unmatchable_patterns, child_status, child_audience}`; reasons are API error codes. The
#   child's status and effective audience come back too: the agent that made the child may not
#   be able to read it (a seat grant for another seat), yet the answer shows it once.
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {
	"allow": count(reasons) == 0,
	"reasons": sort(reasons),
	"widened": sort(widened),
	"unmatchable_patterns": sort(unmatchable_patterns),
	"child_status": grants.status(array.concat([child], input.grant.chain), input.now_ms),
	"child_audience": sort(grants.effective_audience(child, input.grant.members)),
	"org": org_findings,
} if {
	scope.can_read(input.caller, input.grant)
}

# Defence in depth: an agent can read a grant only in its own pod, so this holds already.
reasons contains "not_installed_agent" if input.caller.pod_id != parent.target.pod_id

reasons contains "principal_not_in_audience" if not input.caller.id in parent_audience

reasons contains "runtime_stopped" if input.caller.desired_state == "stopped"

reasons contains "grant_not_usable" if not parent_usable

# An agent may not fan a grant out without bound: live children of one grant are capped.
reasons contains "too_many_children" if input.live_children >= input.max_live_children

# The chain holds the parent and its ancestors, so its length is the child's depth.
reasons contains "delegation_too_deep" if count(input.grant.chain) > input.max_depth

reasons contains "grant_widening" if count(widened) > 0

# A pattern that could only match values no check would ever match.
reasons contains "resource_pattern_invalid" if count(unmatchable_patterns) > 0

reasons contains "audience_not_member" if {
	child.audience_mode == "listed"
	some id in child.audience
	not id in input.grant.members
}

# Under an expired parent an inherited expiry is past too; grant_not_usable says why.
reasons contains "expiry_out_of_range" if {
	parent_usable
	child.expires_at_ms <= input.now_ms
}

# The security team's own rules (lib.org): enforced denials, and approvals asked for.
reasons contains finding.reason if some finding in org_findings.denials

reasons contains "approval_required" if count(org_findings.approvals) > 0

org_findings := org.decision_findings("grants.attenuate")

parent_usable if {
	grants.status(input.grant.chain, input.now_ms) == "active"
	input.grant.connection.status == "connected"
}

widened contains "tools" if {
	some tool in child.tools
	not tool in parent.tools
}

# A write tool under writeMode read would grant more than the mode says.
widened contains "tools" if grants.tools_beyond_mode(child.tools, child.write_mode, input.grant.connection.tools)

widened contains "writeMode" if grants.write_rank[child.write_mode] > grants.write_rank[parent.write_mode]

widened contains "budget.calls" if child.budget.calls > parent.budget.calls

widened contains "budget.windowMs" if child.budget.window_ms < parent.budget.window_ms

# Compared with every ancestor, so a child never outlives any grant above it.
widened contains "expiresAt" if {
	some ancestor in input.grant.chain
	child.expires_at_ms > ancestor.expires_at_ms
}

widened contains "resources" if not resources.within(child, parent)

widened contains "target" if not target_within

widened contains "audience" if not audience_within

target_within if child.target == parent.target

# A pod grant may narrow to one of its seats that the grant already reaches.
target_within if {
	parent.target.kind == "pod"
	child.target.kind == "seat"
	child.target.pod_id == parent.target.id
	child.target.id in parent_audience
}

# A seat child reaches its seat alone.
audience_within if {
	child.target.kind == "seat"
	every id in child.audience {
		id == child.target.id
	}
}

# "Every current member" stays within a parent that also follows membership...
audience_within if {
	child.target.kind == "pod"
	child.audience_mode == "members"
	parent.audience_mode == "members"
}

# ...and a listed audience stays within when each listed member is reached by the parent.
# A listed id that is no member at all is reported as audience_not_member instead.
audience_within if {
	child.target.kind == "pod"
	child.audience_mode == "listed"
	every id in child.audience {
		listed_within(id)
	}
}

listed_within(id) if id in parent_audience

listed_within(id) if not id in input.grant.members

unmatchable_patterns := resources.unmatchable_patterns(object.get(child, "resources", {}))
