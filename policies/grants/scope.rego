# METADATA
# title: Grant read scope
# description: |
#   Who may see a grant: the connection owner; for a pod grant the
#   current members of its pod (humans and installed agents); for a seat grant the seat itself.
#   The read, list, revoke and attenuate decisions share these rules; nothing here is an
#   entrypoint. `facts` is GrantFacts of src/kernel/decisions/facts.ts: the chain (the grant
#   first), the current members of its pod, and its connection.
package grants.scope

# METADATA
# scope: document
# description: Owning the connection is a human's property; an agent never owns one.
is_connection_owner(caller, connection) if {
	caller.kind == "human"
	caller.id == connection.owner_id
}

# METADATA
# scope: document
# description: True when the caller may see the grant whose facts these are.
can_read(caller, facts) if is_connection_owner(caller, facts.connection)

can_read(caller, facts) if {
	facts.chain[0].target.kind == "pod"
	caller.id in facts.members
}

can_read(caller, facts) if {
	facts.chain[0].target.kind == "seat"
	caller.kind == "agent"
	caller.id == facts.chain[0].target.id
}
