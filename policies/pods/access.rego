# METADATA
# title: Pod access
# description: |
#   Who may read a pod and manage its members, installed agents and webhooks:
#   any member reads (the overview of its checks too: members read the pod's grants and their
#   call trails already); owners and admins write; only owners touch the owner role; a pod keeps
#   at least one owner. Webhooks (where approvals are sent, and their URLs) are for owners and
#   admins alone, to read too, and a pod has at most `pod.webhooks.max` of them (each one is
#   another receiver every approval is sent to). Someone outside the pod learns nothing, not even
#   that it exists.
#   Listing pods is a person's: they see the pods they are members of, each one then read
#   with `pod.read` and their role there.
# schemas:
#   - input: schema.pods.access
package pods.access

read_actions := {
	"pod.read",
	"overview.read",
	"members.list",
	"agents.read",
	"tokens.list",
	"runtime.read",
}

manage_actions := {
	"members.add",
	"members.remove",
	"agents.install",
	"agents.update",
	"agents.uninstall",
	# Consenting to an MCP host's connection makes a child grant on an agent's behalf: running it.
	"agents.consent",
	"tokens.create",
	"tokens.delete",
	"runtime.start",
	"runtime.stop",
	"webhooks.create",
	"webhooks.list",
	"webhooks.read",
	"webhooks.delete",
}

# METADATA
# title: decision
# description: The pod access decision, `{allow, reasons}`; reasons are API error codes.
# entrypoint: true
default decision := {"allow": false, "reasons": ["unknown_action"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if known_action

known_action if input.action in read_actions

known_action if input.action in manage_actions

known_action if input.action == "pods.list"

is_member if input.caller.role in {"owner", "admin", "member"}

reasons contains "not_found" if {
	input.action != "pods.list"
	not is_member
}

# A list is of one person's memberships: an agent's pods are its runtime's own route.
reasons contains "credential_not_accepted" if {
	input.action == "pods.list"
	input.caller.kind != "human"
}

reasons contains "not_pod_admin" if {
	is_member
	input.action in manage_actions
	not input.caller.role in {"owner", "admin"}
}

# Admins run the pod day to day; granting or taking the owner role stays with owners.
reasons contains "owner_role_required" if {
	input.caller.role == "admin"
	input.action in {"members.add", "members.remove"}
	input.member.role == "owner"
}

reasons contains "too_many_webhooks" if {
	is_member
	input.action == "webhooks.create"
	input.pod.webhooks.count >= input.pod.webhooks.max
}

reasons contains "last_owner" if {
	is_member
	input.action == "members.remove"
	input.member.role == "owner"
	input.pod.owner_count <= 1
}
