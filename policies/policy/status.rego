# METADATA
# title: Policy status
# description: |
#   Reading the status of the policy this service serves: its revision, source and signature,
#   the security team's org packages with their modes, and what the shadow packages disagreed
#   with. It is the deployment's, not a tenant's, so anyone signed in as a person reads it (the
#   console's policy page); agents and brokers learn nothing, not even that it exists.
#   Input: policies/schemas/policy/status.json (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.policy.status
package policy.status

# METADATA
# title: decision
# description: '`{allow, reasons, org_modes}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"], "org_modes": {}}

decision := {"allow": true, "reasons": [], "org_modes": data.org_settings.modes} if input.caller.kind == "human"
