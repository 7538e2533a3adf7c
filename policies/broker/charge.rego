# METADATA
# title: Broker charge refusals
# description: |
#   A call broker.check allowed can still be refused by the budget script: a level's window
#   is full (`budget_exhausted`, which waiting lifts), or another re-send used the approval first
#   (`approval_used`). The script says which levels are full; this says which one speaks (the one
#   nearest the root) and what would change it, in the shape of explanations.rego.
#   Input: policies/schemas/broker/charge.json.
# schemas:
#   - input: schema.broker.charge
package broker.charge

# METADATA
# title: decision
# description: '`{allow: false, reasons: [reason], explanation}`'
# entrypoint: true
decision := {"allow": false, "reasons": [input.reason], "explanation": explanation}

# The root is last in the chain: the highest index is the level nearest the root.
explanation := {
	"rule": "broker.charge.budget_exhausted",
	"level": (count(input.chain) - 1) - i,
	"grantId": grant.id,
	"unlock": "wait",
} if {
	input.reason == "budget_exhausted"
	i := max(input.full_levels)
	grant := input.chain[i]
}

explanation := {
	"rule": "broker.charge.approval_used",
	"level": count(input.chain) - 1,
	"grantId": input.chain[0].id,
	"unlock": "request_approval",
} if {
	input.reason == "approval_used"
}

# The tree holds as many labels as it may: the call that would add one more is refused, for a
# label dropped would let through what a rule means to refuse after it. Labels expire with time.
explanation := {
	"rule": "broker.charge.session_label_limit",
	"level": 0,
	"grantId": input.chain[count(input.chain) - 1].id,
	"unlock": "wait",
} if {
	input.reason == "session_label_limit"
}
