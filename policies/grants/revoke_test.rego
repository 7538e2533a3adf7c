package grants.revoke_test

import data.grants.revoke
import data.lib.fixtures_test as fixtures

facts(kind, id) := fixtures.facts([fixtures.grant({"target": {"kind": kind, "id": id, "pod_id": "pod_1"}})])

ask(caller, facts) := {"caller": caller, "grant": facts}

test_owner_revokes if {
	revoke.decision == {"allow": true, "reasons": []} with input as ask({"kind": "human", "id": "alice"}, facts("pod", "pod_1"))
}

test_member_may_not if {
	req := ask({"kind": "human", "id": "bob"}, facts("pod", "pod_1"))
	revoke.decision == {"allow": false, "reasons": ["not_connection_owner"]} with input as req
}

test_seat_may_not if {
	req := ask({"kind": "agent", "id": "agt_1"}, facts("seat", "agt_1"))
	revoke.decision == {"allow": false, "reasons": ["not_connection_owner"]} with input as req
}

test_outsider_learns_nothing if {
	req := ask({"kind": "human", "id": "bob"}, facts("seat", "agt_1"))
	revoke.decision == {"allow": false, "reasons": ["not_found"]} with input as req
}

test_unknown_grant if {
	revoke.decision == {"allow": false, "reasons": ["not_found"]} with input as {"caller": {"kind": "human", "id": "alice"}}
}
