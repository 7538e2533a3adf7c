package grants.list_test

import data.grants.list

test_members_list if {
	req := {"caller": {"kind": "agent", "id": "agt_1"}, "pod": {"members": ["alice", "agt_1"]}}
	list.decision == {"allow": true, "reasons": []} with input as req
}

test_outsiders_do_not_see_the_pod if {
	req := {"caller": {"kind": "human", "id": "eve"}, "pod": {"members": ["alice"]}}
	list.decision == {"allow": false, "reasons": ["not_found"]} with input as req
}

test_unknown_pod_not_found if {
	list.decision == {"allow": false, "reasons": ["not_found"]} with input as {"caller": {"kind": "human", "id": "eve"}}
}
