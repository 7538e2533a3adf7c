# METADATA
# title: No direct writes to a default branch
# description: |
#   An example org rule, off until switched on: a write tool whose call names a
#   default branch as its ref is denied `default_branch_write`; changes there go through a pull
#   request. The ref comes from the tool's `resource.ref` pointer into `args`.
# schemas:
#   - input: schema.broker.check
# custom:
#   mode: off
package org.broker.check.protected_branches

# Both spellings a code-hosting API takes for a branch.
default_branches := {"main", "master", "refs/heads/main", "refs/heads/master"}

deny contains {
	"reason": "default_branch_write",
	"message": "writes to a default branch go through a pull request",
} if {
	input.tool.access == "write"
	input.resource.ref in default_branches
}
