# METADATA
# title: Call outcome
# description: |
#   Completing a call record: once, by the grant's own broker, only for a call that
#   was allowed (a denied call never ran), and within 24 days of its check.
#   Input: policies/schemas/broker/outcome.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.broker.outcome
package broker.outcome

import data.broker.ownership

# METADATA
# title: decision
# description: '`{allow, reasons}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if {
	ownership.owned_by(input.grant, input.broker_id)
}

reasons contains "call_denied" if input.call.outcome == "denied"

reasons contains "outcome_already_recorded" if input.call.outcome in {"succeeded", "failed"}

reasons contains "outcome_too_late" if input.call.age_ms > taken_for_ms

# The trail keeps a completion as milliseconds after the check in a 4-byte integer (24.8 days at
# most): a report later than this is refused, and the record stays as it was.
taken_for_ms := 24 * 86400000
