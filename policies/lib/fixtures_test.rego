# METADATA
# title: Test fixtures
# description: |
#   Facts the policy tests share, complete as TypeScript sends them (the schemas of
#   policies/schemas): a test patches only what it is about. Test-only; the build ignores it.
package lib.fixtures_test

now := 1000

pod_target := {"kind": "pod", "id": "pod_1", "pod_id": "pod_1"}

seat_target(id) := {"kind": "seat", "id": id, "pod_id": "pod_1"}

members := ["alice", "bob", "agt_1", "agt_2"]

connection := {
	"id": "con_1",
	"owner_id": "alice",
	"kind": "code_hosting_app",
	"status": "connected",
	"tools": {"repos.read_file": "read", "pulls.list": "read", "issues.create_comment": "write"},
}

# A grant fact; `patch` holds what the test is about.
grant(patch) := object.union(
	{
		"id": "grt_1",
		"target": pod_target,
		"audience_mode": "members",
		"audience": [],
		"tools": ["repos.read_file", "pulls.list", "issues.create_comment"],
		"write_mode": "write",
		"budget": {"calls": 100, "window_ms": 60000},
		"expires_at_ms": 9000,
		"revoked": false,
	},
	patch,
)

# The facts of a grant as the grant decisions read them (`input.grant`).
facts(chain) := {"chain": chain, "members": members, "connection": connection}

# What a decision's `org` field holds when no org package speaks.
no_org_findings := {"denials": [], "approvals": [], "shadow": []}
