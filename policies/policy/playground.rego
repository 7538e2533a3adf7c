# METADATA
# title: Policy playground
# description: |
#   Trying a broker check against the serving policy and a candidate bundle, side by side: it
#   reads recent decisions (their inputs, arguments masked) and runs rules not yet shipped, so it is
#   for security admins alone: an owner or an admin of any pod, or a person the operator names in
#   SECURITY_ADMINS. Agents, brokers and everybody else learn nothing, not even that it exists.
#   Input: policies/schemas/policy/playground.json (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.policy.playground
package policy.playground

# METADATA
# title: decision
# description: '`{allow, reasons}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {"allow": true, "reasons": []} if security_admin

security_admin if {
	input.caller.kind == "human"
	input.caller.named_security_admin
}

security_admin if {
	input.caller.kind == "human"
	input.caller.pod_admin
}
