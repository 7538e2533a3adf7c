# METADATA
# title: Grant read
# description: |
#   Reading a grant or its call trail. Outside the read scope a grant does not
#   exist. An allowed read also carries the status and the effective audience, computed here at
#   read time from the whole chain and from current membership, so TypeScript never derives them.
#   Input: policies/schemas/grants/read.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.grants.read
package grants.read

import data.grants.scope
import data.lib.grants

# METADATA
# title: decision
# description: '`{allow, reasons}`, plus `status` and `audience` when allowed.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {
	"allow": true,
	"reasons": [],
	"status": grants.status(input.grant.chain, input.now_ms),
	"audience": sort(grants.effective_audience(input.grant.chain[0], input.grant.members)),
} if {
	scope.can_read(input.caller, input.grant)
}
