# METADATA
# title: At most three branch deletions per budget window of the tree
# description: |
#   An example org rule, off until switched on: `repos.delete_branch` is denied
#   `branch_deletions_exhausted` once the grant's whole tree (every grant under its root, on every
#   replica) made three such calls within the root grant's budget window (a day, for a root
#   grant with `windowMs` 86400000). `input.session.calls` counts the tree's allowed calls per tool;
#   `counts` in the METADATA makes the budget script charge a deletion only on the count it was
#   decided on, so no two replicas both let a fourth one through.
# schemas:
#   - input: schema.broker.check
# custom:
#   mode: off
#   rule: org.branch_deletions
#   unlock: wait
#   counts: [repos.delete_branch]
package org.broker.check.branch_deletions

limited_tool := "repos.delete_branch"

max_calls := 3

deny contains {
	"reason": "branch_deletions_exhausted",
	"message": "this agent's grants have deleted three branches in their budget window",
} if {
	input.tool.name == limited_tool
	object.get(input.session.calls, limited_tool, 0) >= max_calls
}
