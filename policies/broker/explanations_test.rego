package broker.check_test

import data.broker.check

# The chain is [child, root]: the child is level 1, the root level 0.

test_an_allowed_call_explains_nothing if {
	d := check.decision with input as base
	not d.explanation
}

test_revoked_names_the_revoked_level_nearest_the_root if {
	both := [object.union(child, {"revoked": true}), object.union(root, {"revoked": true})]
	x := check.decision with input as object.union(base, {"chain": both})
	x.explanation == {"rule": "broker.check.revoked", "level": 0, "grantId": "grt_root", "unlock": "ask_connection_owner"}
	only_child := [object.union(child, {"revoked": true}), root]
	y := check.decision with input as object.union(base, {"chain": only_child})
	y.explanation == {
		"rule": "broker.check.revoked", "level": 1, "grantId": "grt_child",
		"unlock": "attenuate_from_parent",
	}
}

test_expired if {
	d := check.decision with input as object.union(base, {"now_ms": 5000})
	e := d.explanation
	e == {"rule": "broker.check.expired", "level": 0, "grantId": "grt_root", "unlock": "ask_connection_owner"}
}

test_disconnected_is_the_connection_owner_s if {
	d := check.decision with input as object.union(base, {"connection": object.union(base.connection, {"status": "disconnected"})})
	e := d.explanation
	e == {"rule": "broker.check.connection_disconnected", "level": 0, "grantId": "grt_root", "unlock": "ask_connection_owner"}
}

test_a_tool_the_connection_does_not_enable if {
	d := check.decision with input as object.union(base, {"tool": {"name": "pulls.merge"}})
	e := d.explanation
	e == {
		"rule": "broker.check.tool_not_allowed", "level": 0, "grantId": "grt_root", "unlock": "ask_connection_owner",
		"dimension": "connection.tools", "value": "pulls.merge",
		"allowed": ["issues.comment", "issues.create_comment", "pulls.list", "repos.read_file"],
	}
}

test_a_tool_the_child_leaves_out if {
	narrow := object.union(child, {"tools": ["issues.comment"]})
	d := check.decision with input as object.union(base, {"chain": [narrow, root]})
	e := d.explanation
	e == {
		"rule": "broker.check.tool_not_allowed", "level": 1, "grantId": "grt_child", "unlock": "attenuate_from_parent",
		"dimension": "tools", "value": "repos.read_file", "allowed": ["issues.comment"],
	}
}

test_a_write_under_a_read_level if {
	d := check.decision with input as object.union(base, {"tool": {"name": "issues.comment", "access": "write"}})
	e := d.explanation
	e == {
		"rule": "broker.check.write_not_allowed", "level": 1, "grantId": "grt_child", "unlock": "attenuate_from_parent",
		"dimension": "write_mode", "value": "write", "allowed": ["read"],
	}
}

test_a_value_not_in_its_canonical_spelling if {
	d := check.decision with input as object.union(base, {"resource": {"path": "docs/../secrets"}})
	e := d.explanation
	e == {
		"rule": "broker.check.resource_invalid", "level": 1, "grantId": "grt_child", "unlock": "none",
		"dimension": "path", "value": "docs/../secrets",
	}
}

test_a_constrained_dimension_the_call_does_not_name if {
	d := check.decision with input as constrained_base
	d.explanation == {
		"rule": "broker.check.resource_unknown", "level": 0, "grantId": "grt_root", "unlock": "none",
		"dimension": "repositories", "allowed": ["acme/*"],
	}
}

test_a_resource_outside_the_chain if {
	d := check.decision with input as on_repository(constrained_base, "acme-evil/api")
	d.explanation == {
		"rule": "broker.check.resource_not_allowed", "level": 0, "grantId": "grt_root", "unlock": "ask_connection_owner",
		"dimension": "repositories", "value": "acme-evil/api", "allowed": ["acme/*"],
	}
}

test_a_resource_only_the_child_refuses if {
	narrowed := object.union(constrained_base, {"chain": [
		constrained(child, {"repositories": ["acme/web"]}),
		constrained(root, {"repositories": ["acme/*"]}),
	]})
	d := check.decision with input as on_repository(narrowed, "acme/api")
	d.explanation.level == 1
	d.explanation.unlock == "attenuate_from_parent"
	d.explanation.allowed == ["acme/web"]
}

test_a_principal_outside_the_audience if {
	listed := object.union(child, {"audience_mode": "listed", "audience": ["alice"]})
	d := check.decision with input as object.union(base, {"chain": [listed, root]})
	e := d.explanation
	e == {
		"rule": "broker.check.principal_not_in_audience", "level": 1, "grantId": "grt_child",
		"unlock": "attenuate_from_parent", "dimension": "audience", "value": "agt_1",
	}
}

test_a_stopped_runtime if {
	d := check.decision with input as object.union(base, {"runtime": {"desired_state": "stopped"}})
	e := d.explanation
	e == {"rule": "broker.check.runtime_stopped", "level": 1, "grantId": "grt_child", "unlock": "none"}
}

test_refusals_of_the_request_are_explained_too if {
	d := check.decision with input as object.remove(base, {"principal"})
	d.explanation.rule == "broker.check.subject_token_invalid"
	a := check.decision with input as object.union(base, {"principal_source": "asserted"})
	a.explanation == {"rule": "broker.check.principal_assertion_refused", "level": 1, "grantId": "grt_child", "unlock": "none"}
}

test_approvals_say_what_to_do if {
	every case in [
		[{}, "approval_required", "request_approval"],
		[{"approval": approval({"state": "pending"})}, "approval_pending", "wait"],
		[{"approval": approval({"state": "denied"})}, "approval_denied", "none"],
		[{"approval": approval({"state": "used"})}, "approval_used", "request_approval"],
		[{"approval": approval({"expires_at_ms": 10})}, "approval_expired", "request_approval"],
		[{"approval": approval({"tool": "pulls.merge"})}, "approval_mismatch", "request_approval"],
	] {
		d := check.decision with input as object.union(approve_mode, case[0])
		d.reason == case[1]
		d.explanation == {"rule": concat(".", ["broker.check", case[1]]), "level": 1, "grantId": "grt_child", "unlock": case[2]}
	}
}

test_an_org_rule_explains_itself_from_its_metadata if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org_settings.rules as {"broker.check": {"team_rule": {"rule": "team.no_default_branch", "unlock": "request_approval"}}}
		with data.org.broker.check.team_rule.deny as org_deny
	d.explanation == {"rule": "team.no_default_branch", "level": 1, "grantId": "grt_child", "unlock": "request_approval"}
}

test_an_org_rule_without_metadata_is_named_for_its_package if {
	d := check.decision with input as base
		with data.org_settings.modes as with_org_rule("enforce")
		with data.org.broker.check.team_rule.deny as org_deny
	d.explanation == {"rule": "org.broker.check.team_rule", "level": 1, "grantId": "grt_child", "unlock": "none"}
}
