# Broker check explanations, in package broker.check (its METADATA is in check.rego). Why a
# check was refused and what would change it, for the one `reason` the check reports:
# `{rule, level, grantId, dimension?, value?, allowed?, unlock}`. `level` is the depth in the
# tree of the grant that refused (0 is the root); when several levels refuse, the one nearest the
# root. A refusal about the call rather than a level (its spelling, its principal's runtime,
# its approval, an org rule) names the grant called. `unlock` is one of
# `attenuate_from_parent` (the level above allows it: ask for a new child), `ask_connection_owner`
# (the root or the connection refuses), `request_approval`, `wait` or `none`.
package broker.check

import data.lib.grants
import data.lib.org
import data.lib.resources

# What the decision adds when it refuses: the explanation of the reason it reports. An allowed
# call adds nothing, and neither would a reason no rule explains (the table tests hold every
# reason to one): an answer is never lost for want of an explanation.
default explained := {}

explained := {"explanation": explanations[reason]} if count(reasons) > 0

# The index in the chain (the grant first, the root last) of the grant called.
leaf := 0

# The index of the refusing level nearest the root: the root is last.
nearest_root(indices) := max(indices)

# A level below the root refuses what its parent allows: a new child from the parent lifts it.
by_level(0) := "ask_connection_owner"

by_level(depth) := "attenuate_from_parent" if depth > 0

at(name, i, chain, unlock) := {
	"rule": concat(".", ["broker.check", name]),
	"level": (count(chain) - 1) - i,
	"grantId": chain[i].id,
	"unlock": unlock,
}

# The same, with what the level allows and the value it refused.
at_level(name, i, chain, detail) := object.union(at(name, i, chain, by_level((count(chain) - 1) - i)), detail)

explanations["revoked"] := at_level("revoked", i, input.chain, {}) if {
	"revoked" in reasons
	i := nearest_root({j | some j, grant in input.chain; grant.revoked})
}

explanations["expired"] := at_level("expired", i, input.chain, {}) if {
	"expired" in reasons
	i := nearest_root({j | some j, grant in input.chain; grant.expires_at_ms <= input.now_ms})
}

explanations["connection_disconnected"] := at("connection_disconnected", count(input.chain) - 1, input.chain, "ask_connection_owner") if {
	"connection_disconnected" in reasons
}

# The connection does not enable the tool: only its owner can. Else the level nearest the root
# that leaves the tool out.
explanations["tool_not_allowed"] := object.union(
	at("tool_not_allowed", count(input.chain) - 1, input.chain, "ask_connection_owner"),
	{"dimension": "connection.tools", "value": input.tool.name, "allowed": sort(object.keys(input.connection.tools))},
) if {
	"tool_not_allowed" in reasons
	not connection_enables_tool
}

explanations["tool_not_allowed"] := at_level("tool_not_allowed", i, input.chain, detail) if {
	"tool_not_allowed" in reasons
	connection_enables_tool
	i := nearest_root({j | some j, grant in input.chain; not input.tool.name in grant.tools})
	detail := {"dimension": "tools", "value": input.tool.name, "allowed": input.chain[i].tools}
}

explanations["write_not_allowed"] := at_level("write_not_allowed", i, input.chain, detail) if {
	"write_not_allowed" in reasons
	i := nearest_root({j | some j, grant in input.chain; grants.tool_beyond_mode(input.tool.access, grant.write_mode)})
	detail := {"dimension": "write_mode", "value": input.tool.access, "allowed": [input.chain[i].write_mode]}
}

# A value not in its canonical spelling: no grant could allow it.
explanations["resource_invalid"] := object.union(at("resource_invalid", leaf, input.chain, "none"), detail) if {
	"resource_invalid" in reasons
	dimension := min({d | some d, value in input.resource; not resources.canonical(d, value)})
	detail := {"dimension": dimension, "value": input.resource[dimension]}
}

# The level constrains a dimension the call names no value for: nothing a grant holder can change.
explanations["resource_unknown"] := object.union(at("resource_unknown", i, input.chain, "none"), detail) if {
	"resource_unknown" in reasons
	i := nearest_root({j | some j, grant in input.chain; resources.unknown(grant.resources, input.resource)})
	constraint := input.chain[i].resources
	dimension := min({d | some d, _ in constraint; not input.resource[resources.value_key[d]]})
	detail := {"dimension": dimension, "allowed": constraint[dimension]}
}

explanations["resource_not_allowed"] := at_level("resource_not_allowed", i, input.chain, detail) if {
	"resource_not_allowed" in reasons
	i := nearest_root({j | some j, grant in input.chain; resources.not_allowed(grant.resources, input.resource)})
	constraint := input.chain[i].resources
	dimension := min({d |
		some d, patterns in constraint
		not resources.matches_any(patterns, input.resource[resources.value_key[d]])
	})
	detail := {"dimension": dimension, "value": input.resource[resources.value_key[dimension]], "allowed": constraint[dimension]}
}

explanations["principal_not_in_audience"] := at_level("principal_not_in_audience", i, input.chain, detail) if {
	"principal_not_in_audience" in reasons
	i := nearest_root({j |
		some j, grant in input.chain
		members := object.get(object.get(input, "members", {}), grant.target.pod_id, [])
		not input.principal.id in grants.effective_audience(grant, members)
	})
	detail := {"dimension": "audience", "value": input.principal.id}
}

# Refusals of the request itself (401, 403: the broker's credential or its trust), the kill
# switch (a human's decision about the agent, not about a grant) and the approvals.
call_unlock := {
	"subject_token_invalid": "none",
	"principal_assertion_refused": "none",
	"runtime_stopped": "none",
	"approval_required": "request_approval",
	"approval_mismatch": "request_approval",
	"approval_used": "request_approval",
	"approval_expired": "request_approval",
	"approval_pending": "wait",
	"approval_denied": "none",
}

explanations[reason] := at(reason, leaf, input.chain, call_unlock[reason]) if some reason in reasons

# An org rule: its id and its unlock come from its package's METADATA (`custom: {rule, unlock}`),
# which the build writes into data.org_settings.rules; without them, the package and `none`.
# Two packages may deny with one reason: the first (findings are sorted) speaks for it.
explanations[reason] := {
	"rule": object.get(settings, "rule", finding.package),
	"level": count(input.chain) - 1,
	"grantId": input.chain[leaf].id,
	"unlock": object.get(settings, "unlock", "none"),
} if {
	some reason in {f.reason | some f in org_findings.denials}
	finding := [f | some f in org_findings.denials; f.reason == reason][0]
	settings := org.rule_settings("broker.check", substring(finding.package, count("org.broker.check."), -1))
}

connection_enables_tool if {
	input.tool.access
	input.connection.tools[input.tool.name]
}
