package grants.create_test

import data.grants.create
import data.lib.fixtures_test as fixtures

now := 1000

day := 86400000

base := {
	"now_ms": now,
	"caller": {"kind": "human", "id": "alice"},
	"connection": {
		"owner_id": "alice",
		"kind": "code_hosting_app",
		"status": "connected",
		"tools": {"repos.read_file": "read", "issues.create_comment": "write"},
	},
	"target": {"kind": "pod", "id": "pod_1"},
	"pod": {"id": "pod_1", "members": ["alice", "bob", "agt_1"]},
	"request": {"tools": ["repos.read_file"], "write_mode": "read", "expires_at_ms": now + day},
}

seat_base := object.union(base, {"target": {"kind": "seat", "id": "agt_1"}, "seat": {"id": "agt_1", "pod_id": "pod_1"}})

with_request(req, patch) := object.union(req, {"request": object.union(req.request, patch)})

with_connection(req, patch) := object.union(req, {"connection": object.union(req.connection, patch)})

test_owner_creates_pod_grant if {
	create.decision == {"allow": true, "reasons": [], "org": fixtures.no_org_findings, "unmatchable_patterns": []} with input as base
}

test_owner_creates_seat_grant if {
	create.decision.allow with input as seat_base
}

test_unknown_connection_not_found if {
	create.decision.reasons == ["not_found"] with input as object.remove(base, {"connection"})
}

test_someone_elses_connection_is_not_found if {
	req := with_request(object.union(base, {"caller": {"kind": "human", "id": "bob"}}), {"tools": ["nope"]})
	create.decision == {"allow": false, "reasons": ["not_found"]} with input as req
}

test_other_kind_refused if {
	create.decision.reasons == ["connection_kind_not_allowed"] with input as with_connection(base, {"kind": "chat_app"})
}

test_disconnected_refused if {
	create.decision.reasons == ["connection_disconnected"] with input as with_connection(base, {"status": "disconnected"})
}

test_pod_the_owner_is_not_in if {
	create.decision.reasons == ["target_not_allowed"] with input as object.union(base, {"pod": {"id": "pod_1", "members": ["bob"]}})
}

test_unknown_pod if {
	create.decision.reasons == ["target_not_allowed"] with input as object.remove(base, {"pod"})
}

test_unknown_target_kind if {
	create.decision.reasons == ["target_not_allowed"] with input as object.union(base, {"target": {"kind": "team", "id": "pod_1"}})
}

test_seat_not_installed if {
	req := object.union(base, {"target": {"kind": "seat", "id": "agt_9"}})
	create.decision.reasons == ["target_not_allowed"] with input as req
}

test_seat_in_a_pod_the_owner_is_not_in if {
	req := object.union(seat_base, {"pod": {"id": "pod_1", "members": ["bob", "agt_1"]}})
	create.decision.reasons == ["target_not_allowed"] with input as req
}

test_listed_members_accepted if {
	create.decision.allow with input as with_request(base, {"audience": ["bob", "agt_1"]})
}

test_listed_non_member_refused if {
	create.decision.reasons == ["audience_not_member"] with input as with_request(base, {"audience": ["bob", "carol"]})
}

test_seat_audience_is_the_seat_alone if {
	create.decision.allow with input as with_request(seat_base, {"audience": ["agt_1"]})
	create.decision.reasons == ["audience_not_member"] with input as with_request(seat_base, {"audience": ["agt_1", "bob"]})
}

test_tool_not_enabled if {
	create.decision.reasons == ["tool_not_enabled"] with input as with_request(base, {"tools": ["repos.read_file", "repos.delete"]})
}

test_write_tool_under_read if {
	create.decision.reasons == ["grant_widening"] with input as with_request(base, {"tools": ["issues.create_comment"]})
}

test_write_tool_under_write if {
	create.decision.allow with input as with_request(base, {"tools": ["issues.create_comment"], "write_mode": "write"})
}

test_expiry_in_the_past if {
	create.decision.reasons == ["expiry_out_of_range"] with input as with_request(base, {"expires_at_ms": now})
}

test_expiry_too_far if {
	create.decision.reasons == ["expiry_out_of_range"] with input as with_request(base, {"expires_at_ms": (now + (365 * day)) + 1})
}

test_expiry_at_the_bound if {
	create.decision.allow with input as with_request(base, {"expires_at_ms": now + (365 * day)})
}

test_every_reason_at_once if {
	req := with_request(
		with_connection(base, {"kind": "chat_app", "status": "disconnected"}),
		{"tools": ["nope", "issues.create_comment"], "expires_at_ms": 0},
	)
	create.decision.reasons == [
		"connection_disconnected", "connection_kind_not_allowed", "expiry_out_of_range",
		"grant_widening", "tool_not_enabled",
	] with input as req
}

# Org packages of grants.create.
test_an_org_rule_refuses_a_grant if {
	d := create.decision with input as base
		with data.org_settings.modes as {"grants.create": {"team_rule": "enforce"}}
		with data.org.grants.create.team_rule.deny as {{"reason": "no_write_grants", "message": "ask the security team"}}
		with data.org.grants.create.team_rule.require_approval as {{"reason": "sensitive"}}
	d.reasons == ["approval_required", "no_write_grants"]
	d.org.denials[0].message == "ask the security team"
}

# A pattern that could only match values no check would match is refused.
test_patterns_that_match_only_non_canonical_values_are_refused if {
	req := with_request(base, {"resources": {"paths": ["docs/**", "docs/../*"], "refs": ["refs/heads/*.lock"]}})
	d := create.decision with input as req
	d.reasons == ["resource_pattern_invalid"]
	d.unmatchable_patterns == ["paths: docs/../*", "refs: refs/heads/*.lock"]
	create.decision.allow with input as with_request(base, {"resources": {"paths": ["docs/**"]}})
}
