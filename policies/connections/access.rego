# METADATA
# title: Connection access
# description: |
#   A connection (a connector installation and its enabled tools) is visible to its owner and
#   to no one else; for everyone else it does not exist.
# schemas:
#   - input: schema.connections.access
package connections.access

actions := {"connection.read", "connection.update"}

# METADATA
# title: decision
# description: The connection access decision, `{allow, reasons}`.
# entrypoint: true
default decision := {"allow": false, "reasons": ["unknown_action"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if input.action in actions

reasons contains "not_found" if not is_owner

is_owner if {
	input.caller.kind == "human"
	input.connection.owner_id == input.caller.id
}
