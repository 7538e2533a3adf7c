package runtime.access_test

import data.runtime.access

caller := {"agent_id": "agt_1", "pod_id": "pod_1"}

allowed := {"allow": true, "reasons": []}

hidden := {"allow": false, "reasons": ["not_found"]}

test_agent_reads_its_pod if {
	access.decision == allowed with input as {"action": "pod.context", "caller": caller, "pod": {"id": "pod_1"}}
}

test_other_pod_is_hidden if {
	access.decision == hidden with input as {"action": "pod.context", "caller": caller, "pod": {"id": "pod_2"}}
}

test_missing_pod_is_hidden if {
	access.decision == hidden with input as {"action": "pod.context", "caller": caller}
}

test_agent_acks_its_event if {
	access.decision == allowed with input as {"action": "event.ack", "caller": caller, "event": {"agent_id": "agt_1"}}
}

test_foreign_event_is_hidden if {
	access.decision == hidden with input as {"action": "event.ack", "caller": caller, "event": {"agent_id": "agt_2"}}
}

test_missing_event_is_hidden if {
	access.decision == hidden with input as {"action": "event.ack", "caller": caller}
}

test_unknown_action_refused if {
	access.decision == {"allow": false, "reasons": ["unknown_action"]} with input as {"action": "pods.delete", "caller": caller}
}
