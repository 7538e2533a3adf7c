package broker.outcome_test

import data.broker.outcome

given(call, broker) := {"broker_id": broker, "grant": {"broker_id": "brk_1"}, "call": call}

test_pending_call_takes_its_outcome if {
	outcome.decision == {"allow": true, "reasons": []} with input as given({"outcome": "pending"}, "brk_1")
}

test_other_broker_learns_nothing if {
	outcome.decision == {"allow": false, "reasons": ["not_found"]} with input as given({"outcome": "pending"}, "brk_2")
}

test_unknown_call_is_not_found if {
	outcome.decision.reasons == ["not_found"] with input as {"broker_id": "brk_1"}
}

test_denied_call_takes_none if {
	outcome.decision.reasons == ["call_denied"] with input as given({"outcome": "denied"}, "brk_1")
}

test_outcome_is_recorded_once if {
	outcome.decision.reasons == ["outcome_already_recorded"] with input as given({"outcome": "failed"}, "brk_1")
}
