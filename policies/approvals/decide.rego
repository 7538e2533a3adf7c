# METADATA
# title: Deciding an approval
# description: |
#   Who may read, list, approve or deny an approval of one call: the connection
#   owner of its grant, or an owner or admin of the grant's target pod; anyone else learns nothing
#   (`not_found`). Nobody decides their own call (`self_approval`); an approval is decided once,
#   before it expires, while its grant is still active. `list` is whether the approval belongs in
#   the caller's list of what they may decide (GET /api/approvals). `read_args` is whether the
#   caller reads the call's arguments while the approval is pending: whoever may decide it (the
#   same deciders, never the call's own principal), whatever its state (they read as null once
#   it has left `pending`).
#   Input: policies/schemas/approvals/decide.json.
# schemas:
#   - input: schema.approvals.decide
package approvals.decide

import data.lib.grants

# METADATA
# title: decision
# description: '`{allow, reasons}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if may_see

may_see if input.caller.id == input.grant.connection.owner_id

may_see if input.caller_role in {"owner", "admin"}

deciding if input.action in {"approve", "deny"}

grant_usable if grants.status(input.grant.chain, input.now_ms) == "active"

# Reading one's own call's approval is fine; deciding it, or having it in one's list, is not.
reasons contains "self_approval" if {
	input.action != "read"
	input.approval.principal.kind == "user"
	input.approval.principal.id == input.caller.id
}

reasons contains "approval_already_decided" if {
	deciding
	input.approval.state != "pending"
}

# A grant that stopped being usable is the reason, not the expiry that came with it (a revoke
# ends its approvals' time then).
reasons contains "approval_expired" if {
	deciding
	input.approval.state == "pending"
	input.approval.expires_at_ms <= input.now_ms
	grant_usable
}

# An approval does not outlive its grant: revoked or expired, nothing is decided on it any more.
reasons contains "grant_not_usable" if {
	deciding
	not grant_usable
}

# Nor does it wait in anyone's list. A decided, used or expired one (a revoke ends its grant's
# approvals then) stays there as history.
reasons contains "grant_not_usable" if {
	input.action == "list"
	input.approval.state == "pending"
	input.approval.expires_at_ms > input.now_ms
	not grant_usable
}
