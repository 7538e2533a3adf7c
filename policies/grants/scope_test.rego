package grants.scope_test

import data.grants.scope
import data.lib.fixtures_test as fixtures

owner := {"kind": "human", "id": "alice"}

connection := fixtures.connection

facts(kind, id) := fixtures.facts([fixtures.grant({"target": {"kind": kind, "id": id, "pod_id": "pod_1"}})])

test_owner_reads_any_grant if {
	scope.can_read(owner, facts("pod", "pod_1"))
	scope.can_read(owner, facts("seat", "agt_1"))
}

test_an_agent_never_owns_a_connection if not scope.is_connection_owner({"kind": "agent", "id": "alice"}, connection)

test_pod_members_read_pod_grants if {
	scope.can_read({"kind": "human", "id": "bob"}, facts("pod", "pod_1"))
	scope.can_read({"kind": "agent", "id": "agt_2"}, facts("pod", "pod_1"))
}

test_outsider_reads_nothing if not scope.can_read({"kind": "human", "id": "mallory"}, facts("pod", "pod_1"))

test_only_the_seat_reads_a_seat_grant if {
	scope.can_read({"kind": "agent", "id": "agt_1"}, facts("seat", "agt_1"))
	not scope.can_read({"kind": "agent", "id": "agt_2"}, facts("seat", "agt_1"))
	not scope.can_read({"kind": "human", "id": "bob"}, facts("seat", "agt_1"))
}

test_a_human_named_like_the_seat_is_not_the_seat if not scope.can_read({"kind": "human", "id": "agt_1"}, facts("seat", "agt_1"))
