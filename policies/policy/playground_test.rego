package policy.playground_test

import data.policy.playground

caller(kind, named, pod_admin) := {"caller": {"kind": kind, "id": "alice", "named_security_admin": named, "pod_admin": pod_admin}}

test_a_pod_owner_or_admin_tries_rules if {
	playground.decision == {"allow": true, "reasons": []} with input as caller("human", false, true)
}

test_a_person_the_operator_names_tries_rules if {
	playground.decision == {"allow": true, "reasons": []} with input as caller("human", true, false)
}

test_a_plain_member_learns_nothing if {
	playground.decision == {"allow": false, "reasons": ["not_found"]} with input as caller("human", false, false)
}

test_agents_and_brokers_learn_nothing_whatever_their_facts_say if {
	every kind in ["agent", "broker"] {
		playground.decision == {"allow": false, "reasons": ["not_found"]} with input as caller(kind, true, true)
	}
}
