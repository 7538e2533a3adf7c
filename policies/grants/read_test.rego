package grants.read_test

import data.grants.read
import data.lib.fixtures_test as fixtures

grant(kind, id, extra) := fixtures.grant(object.union(
	{"id": "grt_child", "target": {"kind": kind, "id": id, "pod_id": "pod_1"}, "expires_at_ms": 5000},
	extra,
))

root := fixtures.grant({"id": "grt_root"})

# What TypeScript sends: the caller, the time and the facts of the grant (chain: grant first).
ask(caller, chain) := {
	"now_ms": 1000,
	"caller": caller,
	"grant": object.union(fixtures.facts(chain), {"members": ["alice", "bob", "agt_1"]}),
}

test_member_reads_with_status_and_audience if {
	read.decision == {
		"allow": true,
		"reasons": [],
		"status": "active",
		"audience": ["agt_1", "alice", "bob"],
	} with input as ask({"kind": "human", "id": "bob"}, [grant("pod", "pod_1", {}), root])
}

test_listed_audience_shrinks_with_membership if {
	leaf := grant("pod", "pod_1", {"audience_mode": "listed", "audience": ["bob", "carol"]})
	read.decision.audience == ["bob"] with input as ask({"kind": "agent", "id": "agt_1"}, [leaf, root])
}

test_status_comes_from_ancestors if {
	chain := [grant("pod", "pod_1", {}), object.union(root, {"revoked": true})]
	read.decision.status == "revoked" with input as ask({"kind": "human", "id": "alice"}, chain)
}

test_seat_grant_for_the_seat if {
	read.decision.audience == ["agt_1"] with input as ask({"kind": "agent", "id": "agt_1"}, [grant("seat", "agt_1", {}), root])
}

test_seat_grant_hidden_from_members if {
	req := ask({"kind": "human", "id": "bob"}, [grant("seat", "agt_1", {}), root])
	read.decision == {"allow": false, "reasons": ["not_found"]} with input as req
}

test_unknown_grant_not_found if {
	req := {"now_ms": 1000, "caller": {"kind": "human", "id": "alice"}}
	read.decision == {"allow": false, "reasons": ["not_found"]} with input as req
}
