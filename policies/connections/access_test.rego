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
