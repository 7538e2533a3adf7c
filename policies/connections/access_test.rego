package connections.access_test

import data.connections.access

connection := {"owner_id": "alice"}

test_owner_reads if {
	access.decision.allow with input as {"action": "connection.read", "caller": {"kind": "human", "id": "alice"}, "connection": connection}
}

test_owner_updates if {
	access.decision.allow with input as {"action": "connection.update", "caller": {"kind": "human", "id": "alice"}, "connection": connection}
}

test_someone_else_sees_nothing if {
	d := access.decision with input as {"action": "connection.read", "caller": {"kind": "human", "id": "bob"}, "connection": connection}
	d == {"allow": false, "reasons": ["not_found"]}
}

test_agent_with_owner_id_is_not_owner if {
	d := access.decision with input as {"action": "connection.read", "caller": {"kind": "agent", "id": "alice"}, "connection": connection}
	d.reasons == ["not_found"]
}

test_missing_connection_not_found if {
	d := access.decision with input as {"action": "connection.update", "caller": {"kind": "human", "id": "alice"}}
	d.reasons == ["not_found"]
}

test_unknown_action if {
	d := access.decision with input as {"action": "connection.delete", "caller": {"kind": "human", "id": "alice"}, "connection": connection}
	d.reasons == ["unknown_action"]
}

app := {"name": "acme", "configured": true}

test_plain_connection_created_by_a_human if {
	access.decision.allow with input as {"action": "connection.create", "caller": {"kind": "human", "id": "alice"}}
}

test_an_agent_creates_no_connection if {
	d := access.decision with input as {"action": "connection.create", "caller": {"kind": "agent", "id": "alice"}}
	d.reasons == ["credential_not_accepted"]
}

test_bound_owner_connects_the_installation if {
	access.decision.allow with input as {
		"action": "connection.create", "caller": {"kind": "human", "id": "alice"},
		"app": app, "binding": {"owner_id": "alice"},
	}
}

test_someone_else_typing_the_installation_id_is_refused if {
	d := access.decision with input as {
		"action": "connection.create", "caller": {"kind": "human", "id": "mallory"},
		"app": app, "binding": {"owner_id": "alice"},
	}
	d == {"allow": false, "reasons": ["installation_not_bound"]}
}

test_an_unbound_installation_is_refused if {
	d := access.decision with input as {"action": "connection.create", "caller": {"kind": "human", "id": "alice"}, "app": app}
	d.reasons == ["installation_not_bound"]
}

test_an_unknown_app_is_refused if {
	d := access.decision with input as {
		"action": "connection.create", "caller": {"kind": "human", "id": "alice"},
		"app": {"name": "nope", "configured": false},
	}
	d.reasons == ["unknown_app"]
}

test_operator_binds if {
	access.decision.allow with input as {
		"action": "installation.bind", "caller": {"kind": "operator", "id": "admin"},
		"app": app, "owner_id": "alice",
	}
}

test_operator_binds_the_same_owner_again if {
	access.decision.allow with input as {
		"action": "installation.bind", "caller": {"kind": "operator", "id": "admin"},
		"app": app, "owner_id": "alice", "binding": {"owner_id": "alice"},
	}
}

test_binding_never_moves_to_another_owner if {
	d := access.decision with input as {
		"action": "installation.bind", "caller": {"kind": "operator", "id": "admin"},
		"app": app, "owner_id": "mallory", "binding": {"owner_id": "alice"},
	}
	d.reasons == ["installation_bound_to_another_owner"]
}

test_only_the_operator_binds if {
	d := access.decision with input as {
		"action": "installation.bind", "caller": {"kind": "human", "id": "alice"},
		"app": app, "owner_id": "alice",
	}
	d.reasons == ["credential_not_accepted"]
}

test_binding_an_unknown_app_is_refused if {
	d := access.decision with input as {
		"action": "installation.bind", "caller": {"kind": "operator", "id": "admin"},
		"app": {"name": "nope", "configured": false}, "owner_id": "alice",
	}
	d.reasons == ["unknown_app"]
}

test_a_person_lists_connections if {
	access.decision == {"allow": true, "reasons": []} with input as {"action": "connections.list", "caller": {"kind": "human", "id": "alice"}}
}

test_only_a_person_lists_connections if {
	every kind in {"agent", "broker", "operator"} {
		d := access.decision with input as {"action": "connections.list", "caller": {"kind": kind, "id": "alice"}}
		d == {"allow": false, "reasons": ["credential_not_accepted"]}
	}
}
