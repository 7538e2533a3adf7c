package approvals.decide_test

import data.approvals.decide
import data.lib.fixtures_test as fixtures

now := 1000

base := {
	"action": "approve",
	"now_ms": now,
	"caller": {"kind": "human", "id": "alice"},
	"approval": {"principal": {"kind": "agent", "id": "agt_1"}, "state": "pending", "expires_at_ms": 5000},
	"grant": fixtures.facts([fixtures.grant({"expires_at_ms": 9000})]),
}

as_caller(id, role) := object.union(base, {"caller": {"kind": "human", "id": id}, "caller_role": role})

test_the_connection_owner_approves if {
	decide.decision.allow with input as base
}

test_a_pod_owner_or_admin_approves if {
	every role in ["owner", "admin"] {
		decide.decision.allow with input as as_caller("carol", role)
	}
}

test_a_member_or_stranger_learns_nothing if {
	decide.decision.reasons == ["not_found"] with input as as_caller("bob", "member")
	decide.decision.reasons == ["not_found"] with input as object.union(base, {"caller": {"kind": "human", "id": "mallory"}})
}

test_nobody_approves_their_own_call if {
	req := object.union(as_caller("carol", "admin"), {"approval": {"principal": {"kind": "user", "id": "carol"}}})
	decide.decision.reasons == ["self_approval"] with input as req
	decide.decision.allow with input as object.union(req, {"action": "read"})
}

test_the_deciders_read_the_arguments_and_nobody_else if {
	reading := object.union(base, {"action": "read_args"})
	decide.decision.allow with input as reading
	decide.decision.allow with input as object.union(reading, {"caller": {"kind": "human", "id": "carol"}, "caller_role": "admin"})

	# Decided or expired: still a decider (the arguments read as null then).
	decide.decision.allow with input as object.union(reading, {"approval": {"state": "approved"}})
	decide.decision.reasons == ["not_found"] with input as object.union(as_caller("bob", "member"), {"action": "read_args"})
	own := object.union(as_caller("carol", "admin"), {"action": "read_args", "approval": {"principal": {"kind": "user", "id": "carol"}}})
	decide.decision.reasons == ["self_approval"] with input as own
}

test_an_approval_is_decided_once_and_before_it_expires if {
	decide.decision.reasons == ["approval_already_decided"] with input as object.union(base, {"approval": {"state": "approved"}})
	decide.decision.reasons == ["approval_expired"] with input as object.union(base, {"approval": {"expires_at_ms": now}})
}

test_an_approval_does_not_outlive_its_grant if {
	revoked := object.union(base, {"grant": fixtures.facts([fixtures.grant({"expires_at_ms": 9000, "revoked": true})])})
	decide.decision.reasons == ["grant_not_usable"] with input as revoked
}

test_the_list_holds_what_the_caller_may_decide if {
	listing := object.union(base, {"action": "list"})
	decide.decision.allow with input as listing

	# Decided ones stay as history; past their expiry they are listed too (as expired).
	decide.decision.allow with input as object.union(listing, {"approval": {"state": "used"}})
	decide.decision.allow with input as object.union(listing, {"approval": {"expires_at_ms": now}})
}

test_the_list_leaves_out_own_calls_and_dead_grants if {
	own := object.union(as_caller("carol", "admin"), {"action": "list", "approval": {"principal": {"kind": "user", "id": "carol"}}})
	decide.decision.reasons == ["self_approval"] with input as own
	revoked := object.union(base, {
		"action": "list",
		"grant": fixtures.facts([fixtures.grant({"expires_at_ms": 9000, "revoked": true})]),
	})
	decide.decision.reasons == ["grant_not_usable"] with input as revoked
	expired := object.union(base, {"action": "list", "grant": fixtures.facts([fixtures.grant({"expires_at_ms": now})])})
	decide.decision.reasons == ["grant_not_usable"] with input as expired
	decide.decision.allow with input as object.union(revoked, {"approval": {"state": "denied"}})
	decide.decision.allow with input as object.union(revoked, {"approval": {"expires_at_ms": now}})
	decide.decision.reasons == ["not_found"] with input as object.union(as_caller("bob", "member"), {"action": "list"})
}

test_a_revoked_grant_is_the_reason_not_the_expiry_it_brought if {
	revoked := object.union(base, {
		"approval": {"expires_at_ms": now},
		"grant": fixtures.facts([fixtures.grant({"expires_at_ms": 9000, "revoked": true})]),
	})
	decide.decision.reasons == ["grant_not_usable"] with input as revoked
}
