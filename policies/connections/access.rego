# METADATA
# title: Connection access
# description: |
#   A connection (a connector installation and its enabled tools) is visible to its owner and
#   to no one else; for everyone else it does not exist. A connection that mints tokens through
#   a GitHub App names an installation of it, and only the user the operator bound that
#   installation to may connect it: anyone else who types its id gets no connection and so no
#   token. The operator binds an installation once; it never moves to another owner.
#   Listing connections is a person's: each listed connection is then read with `connection.read`.
# schemas:
#   - input: schema.connections.access
package connections.access

actions := {"connection.read", "connection.update"}

# METADATA
# title: decision
# description: The connection access decision, `{allow, reasons}`.
# entrypoint: true
default decision := {"allow": false, "reasons": ["unknown_action"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if {
	input.action in (actions | {"connection.create", "connections.list", "installation.bind"})
}

reasons contains "not_found" if {
	input.action in actions
	not is_owner
}

# Creating a connection: anyone signed in as a human; one that names an app only on an
# installation bound to the caller. Binding: the operator alone.
reasons contains "credential_not_accepted" if {
	input.action in {"connection.create", "connections.list"}
	input.caller.kind != "human"
}

reasons contains "credential_not_accepted" if {
	input.action == "installation.bind"
	input.caller.kind != "operator"
}

reasons contains "unknown_app" if {
	input.action in {"connection.create", "installation.bind"}
	input.app.configured == false
}

reasons contains "installation_not_bound" if {
	input.action == "connection.create"
	input.app.configured
	not bound_to_caller
}

# An installation never moves to another owner once bound.
reasons contains "installation_bound_to_another_owner" if {
	input.action == "installation.bind"
	input.binding.owner_id != input.owner_id
}

is_owner if {
	input.caller.kind == "human"
	input.connection.owner_id == input.caller.id
}

bound_to_caller if input.binding.owner_id == input.caller.id
