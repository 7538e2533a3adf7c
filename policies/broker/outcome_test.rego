package broker.outcome_test

import data.broker.outcome

given(call, broker) := {"broker_id": broker, "grant": {"broker_id": "brk_1"}, "call": call}

test_pending_call_takes_its_outcome if {
	outcome.decision == {"allow": true, "reasons": []} with input as given({"outcome": "pending", "age_ms": 1500}, "brk_1")
}

test_other_broker_learns_nothing if {
	outcome.decision == {"allow": false, "reasons": ["not_found"]} with input as given({"outcome": "pending", "age_ms": 1500}, "brk_2")
}

test_unknown_call_is_not_found if {
	outcome.decision.reasons == ["not_found"] with input as {"broker_id": "brk_1"}
}

test_denied_call_takes_none if {
	outcome.decision.reasons == ["call_denied"] with input as given({"outcome": "denied", "age_ms": 10}, "brk_1")
}

test_outcome_is_recorded_once if {
	outcome.decision.reasons == ["outcome_already_recorded"] with input as given({"outcome": "failed", "age_ms": 10}, "brk_1")
}

test_outcome_is_taken_up_to_24_days_after_the_check if {
	outcome.decision.allow with input as given({"outcome": "pending", "age_ms": 24 * 86400000}, "brk_1")
}

test_outcome_later_than_24_days_is_refused if {
	outcome.decision == {"allow": false, "reasons": ["outcome_too_late"]} with input as given(
		{"outcome": "pending", "age_ms": (24 * 86400000) + 1},
		"brk_1",
	)
}

test_late_second_report_names_both_reasons if {
	outcome.decision.reasons == ["outcome_already_recorded", "outcome_too_late"] with input as given(
		{"outcome": "succeeded", "age_ms": 30 * 86400000},
		"brk_1",
	)
}

test_other_broker_learns_nothing_of_a_late_call if {
	outcome.decision.reasons == ["not_found"] with input as given({"outcome": "pending", "age_ms": 30 * 86400000}, "brk_2")
}
