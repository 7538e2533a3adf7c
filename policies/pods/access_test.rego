package pods.access_test

import data.pods.access

caller(role) := {"caller": {"kind": "human", "id": "u1", "role": role}}

test_members_read if {
	every role in {"owner", "admin", "member"} {
		access.decision == {"allow": true, "reasons": []} with input as object.union(caller(role), {"action": "members.list"})
	}
}

test_outsider_sees_nothing if {
	access.decision == {"allow": false, "reasons": ["not_found"]} with input as {"caller": {"kind": "human", "id": "u9"}, "action": "pod.read"}
}

test_outsider_cannot_manage_and_is_not_told_more if {
	d := access.decision with input as {"caller": {"kind": "human", "id": "u9"}, "action": "members.add", "member": {"role": "member"}}
	d.reasons == ["not_found"]
}

test_member_cannot_manage if {
	d := access.decision with input as object.union(caller("member"), {"action": "tokens.create"})
	d == {"allow": false, "reasons": ["not_pod_admin"]}
}

test_webhooks_are_for_owners_and_admins if {
	every role in {"owner", "admin"} {
		every action in {"webhooks.create", "webhooks.list", "webhooks.read", "webhooks.delete"} {
			access.decision.allow with input as object.union(caller(role), {"action": action})
		}
	}
	every action in {"webhooks.create", "webhooks.list"} {
		access.decision.reasons == ["not_pod_admin"] with input as object.union(caller("member"), {"action": action})
		access.decision.reasons == ["not_found"] with input as {"caller": {"kind": "human", "id": "u9"}, "action": action}
	}
}

test_webhooks_are_capped_per_pod if {
	room := {"action": "webhooks.create", "pod": {"owner_count": null, "webhooks": {"count": 9, "max": 10}}}
	access.decision.allow with input as object.union(caller("admin"), room)
	full := {"action": "webhooks.create", "pod": {"owner_count": null, "webhooks": {"count": 10, "max": 10}}}
	access.decision == {"allow": false, "reasons": ["too_many_webhooks"]} with input as object.union(caller("owner"), full)

	# A member is told what a member is told, an outsider nothing, however full the pod.
	access.decision.reasons == ["not_pod_admin", "too_many_webhooks"] with input as object.union(caller("member"), full)
	access.decision.reasons == ["not_found"] with input as object.union({"caller": {"kind": "human", "id": "u9"}}, full)
}

test_admin_manages if {
	access.decision.allow with input as object.union(caller("admin"), {"action": "runtime.stop"})
}

test_admin_adds_plain_member if {
	access.decision.allow with input as object.union(caller("admin"), {"action": "members.add", "member": {"role": "admin"}})
}

test_admin_cannot_add_owner if {
	d := access.decision with input as object.union(caller("admin"), {"action": "members.add", "member": {"role": "owner"}})
	d.reasons == ["owner_role_required"]
}

test_owner_adds_owner if {
	access.decision.allow with input as object.union(caller("owner"), {"action": "members.add", "member": {"role": "owner"}})
}

test_last_owner_stays if {
	d := access.decision with input as object.union(
		caller("owner"),
		{"action": "members.remove", "member": {"role": "owner"}, "pod": {"owner_count": 1}},
	)
	d.reasons == ["last_owner"]
}

test_second_owner_may_go if {
	access.decision.allow with input as object.union(
		caller("owner"),
		{"action": "members.remove", "member": {"role": "owner"}, "pod": {"owner_count": 2}},
	)
}

test_unknown_action_refused if {
	access.decision == {"allow": false, "reasons": ["unknown_action"]} with input as object.union(caller("owner"), {"action": "pods.delete"})
}

test_a_person_lists_their_pods if {
	access.decision == {"allow": true, "reasons": []} with input as {"caller": {"kind": "human", "role": null}, "action": "pods.list"}
}

test_only_a_person_lists_pods if {
	every kind in {"agent", "broker"} {
		d := access.decision with input as {"caller": {"kind": kind, "role": null}, "action": "pods.list"}
		d == {"allow": false, "reasons": ["credential_not_accepted"]}
	}
}

test_a_listed_pod_is_read_with_the_role_there if {
	access.decision.allow with input as object.union(caller("member"), {"action": "pod.read"})
	d := access.decision with input as {"caller": {"kind": "human", "role": null}, "action": "pod.read"}
	d.reasons == ["not_found"]
}

test_the_overview_is_for_members_and_nobody_else if {
	every role in {"owner", "admin", "member"} {
		access.decision == {"allow": true, "reasons": []} with input as object.union(caller(role), {"action": "overview.read"})
	}
	d := access.decision with input as {"caller": {"kind": "human", "role": null}, "action": "overview.read"}
	d == {"allow": false, "reasons": ["not_found"]}
	agent := access.decision with input as {"caller": {"kind": "agent", "role": null}, "action": "overview.read"}
	agent.reasons == ["not_found"]
}

# Consenting to an MCP host's connection runs the agent: owners and admins, not members, not outsiders.
test_agent_consent_is_for_owners_and_admins if {
	every role in {"owner", "admin"} {
		access.decision == {"allow": true, "reasons": []} with input as object.union(caller(role), {"action": "agents.consent"})
	}
}

test_member_may_not_consent if {
	d := access.decision with input as object.union(caller("member"), {"action": "agents.consent"})
	d == {"allow": false, "reasons": ["not_pod_admin"]}
}

test_outsider_consent_is_not_found if {
	d := access.decision with input as {"caller": {"kind": "human", "id": "u9"}, "action": "agents.consent"}
	d == {"allow": false, "reasons": ["not_found"]}
}
