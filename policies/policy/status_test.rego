package policy.status_test

import data.policy.status

modes := {"broker.check": {"protected_branches": "enforce", "working_hours": "off"}, "grants.create": {}}

test_a_person_reads_the_status_with_the_org_modes if {
	status.decision == {"allow": true, "reasons": [], "org_modes": modes} with input as {"caller": {"kind": "human", "id": "alice"}}
		with data.org_settings.modes as modes
}

test_agents_and_brokers_learn_nothing if {
	every kind in ["agent", "broker"] {
		status.decision == {"allow": false, "reasons": ["not_found"], "org_modes": {}} with input as {"caller": {"kind": kind, "id": "x"}}
			with data.org_settings.modes as modes
	}
}
