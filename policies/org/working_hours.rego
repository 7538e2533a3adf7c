# METADATA
# title: Write tools in working hours only
# description: |
#   An example org rule, off until switched on: a write tool called outside
#   Monday to Friday, 09:00 to 18:00 in POLICY_TIME_ZONE is denied `outside_working_hours`.
#   The time is `input.local_time`, which the service computes: the WASM target has no clock.
# schemas:
#   - input: schema.broker.check
# custom:
#   mode: off
package org.broker.check.working_hours

# 09:00 to 18:00; keep the message below in step.
opening_hour := 9

closing_hour := 18

deny contains {
	"reason": "outside_working_hours",
	"message": concat(" ", ["write tools run Monday to Friday, 09:00 to 18:00", input.local_time.time_zone]),
} if {
	input.tool.access == "write"
	not in_working_hours
}

in_working_hours if {
	input.local_time.weekday <= 5
	input.local_time.hour >= opening_hour
	input.local_time.hour < closing_hour
}
