# METADATA
# title: Deciding an approval
# description: |
#   Who may read, approve or deny an approval of one call (CONTRACT §9): the connection owner of
#   its grant, or an owner or admin of the grant's target pod; anyone else learns nothing
#   (`not_found`). Nobody decides their own call (`self_approval`); an approval is decided once,
#   before it expires, while its grant is still active.
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

reasons contains "self_approval" if {
	input.action != "read"
	input.approval.principal.kind == "user"
	input.approval.principal.id == input.caller.id
}

reasons contains "approval_already_decided" if {
	input.action != "read"
	input.approval.state != "pending"
}

reasons contains "approval_expired" if {
	input.action != "read"
	input.approval.state == "pending"
	input.approval.expires_at_ms <= input.now_ms
}

# An approval does not outlive its grant: revoked or expired, nothing is decided on it any more.
reasons contains "grant_not_usable" if {
	input.action != "read"
	grants.status(input.grant.chain, input.now_ms) != "active"
}
