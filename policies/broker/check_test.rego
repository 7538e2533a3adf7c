package broker.check_test

import data.broker.check
import data.lib.fixtures_test as fixtures

now := 1000

root := object.union(
	fixtures.grant({"id": "grt_root", "expires_at_ms": 5000, "tools": ["repos.read_file", "issues.comment"]}),
	{"parent_id": null, "root_id": "grt_root", "broker_id": "brk_1", "connection_id": "con_1"},
)

child := object.union(root, {"id": "grt_child", "parent_id": "grt_root", "write_mode": "read"})

base := {
	"now_ms": now,
	"broker_id": "brk_1",
	"local_time": {"time_zone": "UTC", "weekday": 1, "hour": 10, "minute": 0},
	"tool": {"name": "repos.read_file", "access": "read"},
	"args": {"path": "README.md"},
	"resource": {},
	"principal": {"kind": "agent", "id": "agt_1"},
	"principal_source": "subject_token",
	"trust_asserted_principal": false,
	"chain": [child, root],
	"connection": object.union(fixtures.connection, {"tools": {"repos.read_file": "read", "issues.comment": "write"}}),
	"members": {"pod_1": ["agt_1"]},
	"runtime": {"desired_state": "running"},
}

test_allows_a_usable_chain if {
	d := check.decision with input as object.union(base, {})
	d == {
		"allow": true, "reasons": [], "reason": "allowed", "org": fixtures.no_org_findings,
		"consumes_approval": false, "labels": [], "shadow_labels": [], "exact_calls": false,
	}
}

test_another_broker_learns_nothing if {
	d := check.decision with input as object.union(base, {"broker_id": "brk_2"})
	d == {"allow": false, "reasons": ["not_found"], "reason": "not_found"}
}

test_unknown_grant_is_not_found if {
	d := check.decision with input as object.union(base, {"chain": []})
	d.reason == "not_found"
}

test_a_subject_token_that_did_not_verify_is_refused if {
	d := check.decision with input as object.remove(base, {"principal"})
	d.allow == false
	d.reason == "subject_token_invalid"
}

test_another_broker_learns_nothing_even_with_a_bad_subject_token if {
	d := check.decision with input as object.union(object.remove(base, {"principal"}), {"broker_id": "brk_2"})
	d.reasons == ["not_found"]
}

test_an_asserted_principal_is_refused_unless_trusted if {
	refused := check.decision with input as object.union(base, {"principal_source": "asserted"})
	refused.reason == "principal_assertion_refused"
	trusted := check.decision with input as object.union(base, {"principal_source": "asserted", "trust_asserted_principal": true})
	trusted.allow == true
}

test_revoked_ancestor if {
	d := check.decision with input as object.union(base, {"chain": [child, object.union(root, {"revoked": true})]})
	d.reason == "revoked"
}

test_expired if {
	d := check.decision with input as object.union(base, {"now_ms": 5000})
	d.reason == "expired"
}

test_disconnected if {
	d := check.decision with input as object.union(base, {"connection": object.union(base.connection, {"status": "disconnected"})})
	d.reason == "connection_disconnected"
}

test_tool_outside_the_grant if {
	d := check.decision with input as object.union(base, {"tool": {"name": "pulls.merge"}})
	d.reason == "tool_not_allowed"
}

test_tool_no_longer_on_the_connection if {
	d := check.decision with input as object.union(object.remove(base, ["connection"]), {"connection": {"status": "connected", "tools": {}}})
	d.reason == "tool_not_allowed"
}

test_write_tool_under_a_read_level if {
	d := check.decision with input as object.union(base, {"tool": {"name": "issues.comment", "access": "write"}})
	d.reason == "write_not_allowed"
}

test_write_tool_under_write_levels if {
	d := check.decision with input as object.union(base, {"tool": {"name": "issues.comment", "access": "write"}, "chain": [root]})
	d.allow
}

test_non_member if {
	d := check.decision with input as object.remove(base, ["members"])
	d.reason == "principal_not_in_audience"
}

test_listed_audience_excludes_others if {
	listed := object.union(root, {"audience_mode": "listed", "audience": ["alice"]})
	d := check.decision with input as object.union(base, {"chain": [listed]})
	d.reason == "principal_not_in_audience"
}

test_stopped_runtime if {
	d := check.decision with input as object.union(base, {"runtime": {"desired_state": "stopped"}})
	d.reason == "runtime_stopped"
}

test_users_have_no_runtime if {
	user := {"principal": {"kind": "user", "id": "alice"}, "members": {"pod_1": ["alice"]}}
	d := check.decision with input as object.union(base, user)
	d.allow
}

test_reason_follows_precedence if {
	patch := {"runtime": {"desired_state": "stopped"}, "tool": {"name": "pulls.merge"}}
	d := check.decision with input as object.union(object.remove(base, ["members"]), patch)
	d.reasons == ["principal_not_in_audience", "runtime_stopped", "tool_not_allowed"]
	d.reason == "tool_not_allowed"
}

# Resources constrain every level of the chain.
constrained(grant, patterns) := object.union(grant, {"resources": patterns})

constrained_base := object.union(base, {
	"chain": [child, constrained(root, {"repositories": ["acme/*"]})],
	"tool": {"name": "repos.read_file", "access": "read", "resource": {"repository": "/repo"}},
})

on_repository(req, repository) := object.union(req, {"args": {"repo": repository}, "resource": {"repository": repository}})

test_a_call_on_a_resource_the_chain_allows if {
	d := check.decision with input as on_repository(constrained_base, "acme/api")
	d.allow
}

test_a_call_on_a_resource_outside_the_chain if {
	d := check.decision with input as on_repository(constrained_base, "acme-evil/api")
	d.reason == "resource_not_allowed"
}

test_a_call_that_names_no_constrained_resource_fails_closed if {
	d := check.decision with input as constrained_base
	d.reason == "resource_unknown"
}

# Org packages add findings by their mode.
org_deny := {{"reason": "default_branch_write", "message": "use a pull request"}}

with_org_rule(mode) := {"broker.check": {"team_rule": mode}}

test_an_enforced_org_rule_denies_with_its_own_reason if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org.broker.check.team_rule.deny as org_deny
	d.allow == false
	d.reason == "default_branch_write"
	d.org.denials == [{"package": "org.broker.check.team_rule", "reason": "default_branch_write", "message": "use a pull request"}]
}

test_a_core_reason_comes_before_an_org_reason if {
	d := check.decision with input as object.union(base, {"tool": {"name": "pulls.merge"}})
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org.broker.check.team_rule.deny as org_deny
	d.reason == "tool_not_allowed"
	"default_branch_write" in d.reasons
}

test_a_shadow_org_rule_is_reported_not_enforced if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("shadow")
		with data.org.broker.check.team_rule.deny as org_deny
	d.allow
	d.org.shadow == [{
		"package": "org.broker.check.team_rule", "reason": "default_branch_write",
		"message": "use a pull request", "effect": "deny",
	}]
}

test_an_org_rule_that_is_off_is_not_read if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("off")
		with data.org.broker.check.team_rule.deny as org_deny
	d == {
		"allow": true, "reasons": [], "reason": "allowed", "org": fixtures.no_org_findings,
		"consumes_approval": false, "labels": [], "shadow_labels": [], "exact_calls": false,
	}
}

test_an_org_rule_may_require_approval if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org.broker.check.team_rule.require_approval as {{"reason": "production_write"}}
	d.reason == "approval_required"
	d.org.approvals == [{"package": "org.broker.check.team_rule", "reason": "production_write", "message": ""}]
}

test_an_org_denial_comes_before_an_approval if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org.broker.check.team_rule.deny as {{"message": "no reason given"}}
		with data.org.broker.check.team_rule.require_approval as {{"reason": "production_write"}}
	d.reason == "org_denied"
}

test_a_tool_without_access_on_its_connection_is_not_allowed if {
	d := check.decision with input as object.union(object.remove(base, ["tool"]), {"tool": {"name": "repos.read_file"}})
	d.reason == "tool_not_allowed"
}

# A write tool under `approve` waits for a human's approval of that very call.
approve_mode := object.union(base, {
	"chain": [object.union(child, {"write_mode": "approve"}), object.union(root, {"write_mode": "approve"})],
	"tool": {"name": "issues.comment", "access": "write"},
	"args_digest": "sha256:aa",
})

approval(patch) := object.union(
	{
		"id": "apr_1", "found": true, "grant_id": "grt_child", "tool": "issues.comment",
		"principal": {"kind": "agent", "id": "agt_1"}, "args_digest": "sha256:aa",
		"state": "approved", "expires_at_ms": now + 1000,
	},
	patch,
)

with_approval(patch) := object.union(approve_mode, {"approval": approval(patch)})

test_a_write_under_approve_needs_an_approval if {
	d := check.decision with input as approve_mode
	d.reason == "approval_required"
	d.consumes_approval == false
}

test_a_read_under_approve_needs_none if {
	d := check.decision with input as object.union(approve_mode, {"tool": {"name": "repos.read_file", "access": "read"}})
	d.allow
}

test_an_approval_of_this_call_allows_it_once if {
	d := check.decision with input as with_approval({})
	d.allow
	d.consumes_approval
}

test_every_mismatch_has_its_reason if {
	every row in [
		[{"state": "pending"}, "approval_pending"],
		[{"state": "denied"}, "approval_denied"],
		[{"state": "used"}, "approval_used"],
		[{"expires_at_ms": now}, "approval_expired"],
		[{"args_digest": "sha256:bb"}, "approval_mismatch"],
		[{"tool": "repos.read_file"}, "approval_mismatch"],
		[{"grant_id": "grt_other"}, "approval_mismatch"],
		[{"principal": {"kind": "agent", "id": "agt_2"}}, "approval_mismatch"],
		[{"found": false}, "approval_mismatch"],
	] {
		d := check.decision with input as with_approval(row[0])
		d.reason == row[1]
	}
}

test_an_approval_does_not_outlive_its_grant if {
	revoked := object.union(with_approval({}), {"chain": [object.union(child, {"write_mode": "approve", "revoked": true}), root]})
	d := check.decision with input as revoked
	d.reason == "revoked"
}

# A non-canonical value is denied whatever the chain's patterns, unconstrained too.
test_a_call_on_a_non_canonical_resource_is_invalid if {
	d := check.decision with input as on_repository(base, "acme/..")
	d.reason == "resource_invalid"
	not d.allow
}

# `acme/*` would match `acme/..` as text; the walk out is refused before any pattern is matched.
test_a_constrained_chain_cannot_be_walked_out_of if {
	d := check.decision with input as on_repository(constrained_base, "acme/..")
	d.reasons == ["resource_invalid"]
}

test_a_tool_an_enforced_rule_counts_is_charged_on_its_exact_count if {
	counting := {"broker.check": {"team_rule": {"counts": ["repos.read_file"]}}}
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org_settings.rules as counting
	d.exact_calls
	shadow := check.decision with input as base
		with data.org_settings.modes as with_org_rule("shadow")
		with data.org_settings.rules as counting
	shadow.exact_calls == false
}
