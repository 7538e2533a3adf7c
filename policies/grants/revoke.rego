# METADATA
# title: Grant revocation
# description: |
#   Revoking (or deleting) a grant is for the owner of its connection, which is
#   the same connection along the whole tree. A caller who can read the grant but does not own
#   the connection is refused; anyone else learns nothing.
#   Input: policies/schemas/grants/revoke.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.grants.revoke
package grants.revoke

import data.grants.scope

# METADATA
# title: decision
# description: '`{allow, reasons}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if scope.can_read(input.caller, input.grant)

reasons contains "not_connection_owner" if not scope.is_connection_owner(input.caller, input.grant.connection)
