# METADATA
# title: Grant facts
# description: |
#   What every grant decision shares: the status of a grant computed from its whole chain, and
#   its effective audience computed from current membership. Grant and broker
#   policies import this package; nothing here is an entrypoint.
#
#   A grant fact is GrantFact of src/kernel/decisions/facts.ts (in every input schema of
#   policies/schemas). A chain is a list of grant facts: the grant itself first, its root last.
#   Members are the ids (humans and installed agents) currently in the grant's target pod.
package lib.grants

# `read` < `approve` < `write`: attenuation may only move down.
write_rank := {"read": 0, "approve": 1, "write": 2}

# METADATA
# scope: document
# description: |
#   A tool of this access (`read` or `write`) is beyond a grant's write mode: a write tool under
#   `read`. The one rule behind grant_widening (create, attenuate) and write_not_allowed (broker).
#   Under `approve` a write tool is within the mode, each call waiting for a human's approval.
tool_beyond_mode(access, write_mode) if {
	access == "write"
	write_mode == "read"
}

# METADATA
# scope: document
# description: Some of these tools, by their access on the connection, are beyond the write mode.
tools_beyond_mode(tools, write_mode, connection_tools) if {
	some tool in tools
	tool_beyond_mode(connection_tools[tool], write_mode)
}

any_revoked(chain) if {
	some grant in chain
	grant.revoked
}

any_expired(chain, now_ms) if {
	some grant in chain
	grant.expires_at_ms <= now_ms
}

# METADATA
# scope: document
# description: active, revoked or expired; revocation anywhere up the chain wins.
status(chain, _) := "revoked" if any_revoked(chain)

status(chain, now_ms) := "expired" if {
	not any_revoked(chain)
	any_expired(chain, now_ms)
}

status(chain, now_ms) := "active" if {
	not any_revoked(chain)
	not any_expired(chain, now_ms)
}

# METADATA
# scope: document
# description: A seat grant reaches its seat while the seat is installed (a member of its pod).
effective_audience(grant, members) := {id |
	some id in members
	id == grant.target.id
} if {
	grant.target.kind == "seat"
}

effective_audience(grant, members) := {id | some id in members} if {
	grant.target.kind == "pod"
	grant.audience_mode == "members"
}

effective_audience(grant, members) := {id |
	some id in grant.audience
	id in members
} if {
	grant.target.kind == "pod"
	grant.audience_mode == "listed"
}
