package broker.charge_test

import data.broker.charge

chain := [{"id": "grt_leaf"}, {"id": "grt_mid"}, {"id": "grt_root"}]

test_a_full_budget_names_the_level_nearest_the_root if {
	d := charge.decision with input as {"reason": "budget_exhausted", "chain": chain, "full_levels": [0, 1]}
	d == {"allow": false, "reasons": ["budget_exhausted"], "explanation": {
		"rule": "broker.charge.budget_exhausted",
		"level": 1, "grantId": "grt_mid", "unlock": "wait",
	}}
}

test_a_full_root_is_level_zero if {
	d := charge.decision with input as {"reason": "budget_exhausted", "chain": chain, "full_levels": [2]}
	d.explanation.level == 0
	d.explanation.grantId == "grt_root"
}

test_an_approval_used_by_another_re_send if {
	d := charge.decision with input as {"reason": "approval_used", "chain": chain, "full_levels": []}
	d.explanation == {"rule": "broker.charge.approval_used", "level": 2, "grantId": "grt_leaf", "unlock": "request_approval"}
}

test_nothing_to_explain_without_a_full_level if {
	not charge.decision with input as {"reason": "budget_exhausted", "chain": chain, "full_levels": []}
}

test_the_labels_cap_is_the_tree_s if {
	d := charge.decision with input as {"reason": "session_label_limit", "chain": chain, "full_levels": []}
	d.explanation == {"rule": "broker.charge.session_label_limit", "level": 0, "grantId": "grt_root", "unlock": "wait"}
}
