package grants.attenuate_test

import data.grants.attenuate
import data.lib.fixtures_test as fixtures

now := fixtures.now

pod_target := fixtures.pod_target

seat_target(id, pod) := object.union(fixtures.seat_target(id), {"pod_id": pod})

parent := fixtures.grant({"id": "grt_parent", "expires_at_ms": 8000})

root := fixtures.grant({"id": "grt_root", "expires_at_ms": 9000})

facts := fixtures.facts([parent, root])

child := {
	"target": pod_target,
	"audience_mode": "members",
	"audience": [],
	"tools": ["repos.read_file"],
	"write_mode": "read",
	"budget": {"calls": 10, "window_ms": 60000},
	"expires_at_ms": 8000,
	"revoked": false,
}

base := {
	"now_ms": now,
	"max_depth": 8,
	"max_live_children": 3,
	"live_children": 0,
	"caller": {"kind": "agent", "id": "agt_1", "pod_id": "pod_1", "desired_state": "running"},
	"grant": facts,
	"child": child,
}

with_child(req, patch) := object.union(req, {"child": object.union(req.child, patch)})

# Replaces the parent (the first grant of the chain), keeping its ancestors.
with_parent(req, patch) := object.union(req, {"grant": object.union(
	req.grant,
	{"chain": array.concat([object.union(req.grant.chain[0], patch)], array.slice(req.grant.chain, 1, count(req.grant.chain)))},
)})

with_caller(req, patch) := object.union(req, {"caller": object.union(req.caller, patch)})

listed(ids) := {"audience_mode": "listed", "audience": ids}

test_narrower_child_allowed if {
	attenuate.decision == {
		"allow": true,
		"reasons": [],
		"widened": [],
		"unmatchable_patterns": [],
		"org": fixtures.no_org_findings,
		"child_status": "active",
		"child_audience": ["agt_1", "agt_2", "alice", "bob"],
	} with input as base
}

test_child_of_a_seat_narrowing_reaches_the_seat if {
	req := with_child(base, object.union(listed(["agt_2"]), {"target": seat_target("agt_2", "pod_1")}))
	attenuate.decision.child_audience == ["agt_2"] with input as req
}

test_unreadable_parent_not_found if {
	attenuate.decision == {"allow": false, "reasons": ["not_found"]} with input as with_caller(base, {"id": "agt_9"})
}

test_unknown_parent_not_found if {
	attenuate.decision.reasons == ["not_found"] with input as object.remove(base, {"grant"})
}

test_agent_of_another_pod if {
	attenuate.decision.reasons == ["not_installed_agent"] with input as with_caller(base, {"pod_id": "pod_2"})
}

test_reader_outside_listed_audience if {
	req := with_child(with_parent(base, listed(["agt_2"])), listed(["agt_2"]))
	attenuate.decision.reasons == ["principal_not_in_audience"] with input as req
}

test_stopped_runtime if {
	attenuate.decision.reasons == ["runtime_stopped"] with input as with_caller(base, {"desired_state": "stopped"})
}

test_revoked_parent_not_usable if {
	attenuate.decision.reasons == ["grant_not_usable"] with input as with_parent(base, {"revoked": true})
}

test_expired_ancestor_not_usable if {
	req := object.union(base, {"grant": object.union(facts, {"chain": [parent, object.union(root, {"expires_at_ms": now})]})})
	"grant_not_usable" in attenuate.decision.reasons with input as req
}

test_expired_parent_is_only_not_usable if {
	req := with_child(with_parent(base, {"expires_at_ms": now}), {"expires_at_ms": now})
	attenuate.decision.reasons == ["grant_not_usable"] with input as req
}

test_disconnected_connection_not_usable if {
	req := object.union(base, {"grant": object.union(facts, {"connection": object.union(facts.connection, {"status": "disconnected"})})})
	attenuate.decision.reasons == ["grant_not_usable"] with input as req
}

test_depth_cap if {
	attenuate.decision.allow with input as object.union(base, {"max_depth": 2})
	attenuate.decision.reasons == ["delegation_too_deep"] with input as object.union(base, {"max_depth": 1})
}

test_wider_tools if {
	attenuate.decision.widened == ["tools"] with input as with_child(base, {"tools": ["repos.read_file", "repos.delete"]})
}

test_write_tool_under_read if {
	attenuate.decision.widened == ["tools"] with input as with_child(base, {"tools": ["issues.create_comment"]})
}

test_wider_write_mode if {
	req := with_child(with_parent(base, {"write_mode": "read"}), {"write_mode": "write"})
	attenuate.decision.widened == ["writeMode"] with input as req
	attenuate.decision.reasons == ["grant_widening"] with input as req
}

test_more_calls if {
	attenuate.decision.widened == ["budget.calls"] with input as with_child(base, {"budget": {"calls": 101, "window_ms": 60000}})
}

test_shorter_window if {
	attenuate.decision.widened == ["budget.windowMs"] with input as with_child(base, {"budget": {"calls": 10, "window_ms": 59999}})
}

test_later_expiry if {
	attenuate.decision.widened == ["expiresAt"] with input as with_child(base, {"expires_at_ms": 8001})
}

test_expiry_checked_against_every_ancestor if {
	req := with_child(with_parent(base, {"expires_at_ms": 9500}), {"expires_at_ms": 9200})
	attenuate.decision.widened == ["expiresAt"] with input as req
}

test_expiry_in_the_past if {
	attenuate.decision.reasons == ["expiry_out_of_range"] with input as with_child(base, {"expires_at_ms": now})
}

test_narrow_to_a_seat_in_the_audience if {
	req := with_child(base, object.union(listed(["agt_2"]), {"target": seat_target("agt_2", "pod_1")}))
	attenuate.decision.allow with input as req
}

test_seat_outside_the_audience if {
	req := with_child(with_parent(base, listed(["agt_1"])), object.union(listed(["agt_2"]), {"target": seat_target("agt_2", "pod_1")}))
	attenuate.decision.widened == ["target"] with input as req
}

test_seat_of_another_pod if {
	req := with_child(base, object.union(listed(["agt_7"]), {"target": seat_target("agt_7", "pod_2")}))
	attenuate.decision.widened == ["target"] with input as req
}

test_seat_child_audience_is_the_seat if {
	req := with_child(base, object.union(listed(["agt_2", "bob"]), {"target": seat_target("agt_2", "pod_1")}))
	attenuate.decision.widened == ["audience"] with input as req
}

test_other_pod_target if {
	attenuate.decision.widened == ["target"] with input as with_child(base, {"target": {"kind": "pod", "id": "pod_2", "pod_id": "pod_2"}})
}

test_seat_parent_cannot_become_pod if {
	req := with_parent(base, object.union(listed(["agt_1"]), {"target": seat_target("agt_1", "pod_1")}))
	attenuate.decision.widened == ["audience", "target"] with input as req
}

test_seat_parent_same_seat if {
	seat := object.union(listed(["agt_1"]), {"target": seat_target("agt_1", "pod_1")})
	attenuate.decision.allow with input as with_child(with_parent(base, seat), seat)
}

test_listed_child_within_members if {
	attenuate.decision.allow with input as with_child(base, listed(["bob", "agt_1"]))
}

test_listed_child_beyond_listed_parent if {
	req := with_child(with_parent(base, listed(["agt_1"])), listed(["agt_1", "bob"]))
	attenuate.decision.widened == ["audience"] with input as req
}

test_members_child_beyond_listed_parent if {
	attenuate.decision.widened == ["audience"] with input as with_parent(base, listed(["agt_1", "bob"]))
}

test_listed_non_member if {
	req := with_child(base, listed(["agt_1", "carol"]))
	attenuate.decision.reasons == ["audience_not_member"] with input as req
	attenuate.decision.widened == [] with input as req
}

test_live_children_are_capped if {
	attenuate.decision.allow with input as object.union(base, {"live_children": 2})
	refused := attenuate.decision with input as object.union(base, {"live_children": 3})
	refused.reasons == ["too_many_children"]
}

# A child narrows the parent's resources, never widens them.
under_acme := with_parent(base, {"resources": {"repositories": ["acme/*"]}})

test_a_child_may_narrow_resources if {
	attenuate.decision.allow with input as with_child(under_acme, {"resources": {"repositories": ["acme/api"]}})
}

test_a_child_may_not_widen_resources if {
	d := attenuate.decision with input as with_child(under_acme, {"resources": {"repositories": ["acme/*", "other/*"]}})
	d.reasons == ["grant_widening"]
	d.widened == ["resources"]
}

test_a_child_may_not_drop_a_constrained_dimension if {
	d := attenuate.decision with input as under_acme
	d.widened == ["resources"]
}

# Org packages of grants.attenuate.
test_an_org_rule_refuses_an_attenuation if {
	d := attenuate.decision with input as base
		with data.org_settings.modes as {"grants.attenuate": {"team_rule": "enforce"}}
		with data.org.grants.attenuate.team_rule.deny as {{"reason": "no_subdelegation"}}
		with data.org.grants.attenuate.team_rule.require_approval as {{"reason": "sensitive"}}
	d.reasons == ["approval_required", "no_subdelegation"]
}

# Write → approve → read, only downwards.
test_write_mode_narrows_through_approve if {
	under_write := with_parent(base, {"write_mode": "write"})
	attenuate.decision.allow with input as with_child(under_write, {"write_mode": "approve"})
	under_approve := with_parent(base, {"write_mode": "approve"})
	attenuate.decision.allow with input as with_child(under_approve, {"write_mode": "read"})
	d := attenuate.decision with input as with_child(under_approve, {"write_mode": "write"})
	d.widened == ["writeMode"]
}

# `acme/*` covers `acme/..` as text; the child's pattern is refused all the same.
test_a_child_pattern_that_matches_only_non_canonical_values_is_refused if {
	d := attenuate.decision with input as with_child(under_acme, {"resources": {"repositories": ["acme/.."]}})
	d.reasons == ["resource_pattern_invalid"]
	d.unmatchable_patterns == ["repositories: acme/.."]
}
