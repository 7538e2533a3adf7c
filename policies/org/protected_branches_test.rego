package org.broker.check.protected_branches_test

import data.org.broker.check.protected_branches

write_to(ref) := {"tool": {"name": "repos.push", "access": "write"}, "resource": {"ref": ref}}

# `every`, not `some`: each spelling of each default branch must be denied on its own.
test_a_write_to_a_default_branch_is_denied if {
	every ref in ["main", "master", "refs/heads/main", "refs/heads/master"] {
		protected_branches.deny == {{
			"reason": "default_branch_write",
			"message": "writes to a default branch go through a pull request",
		}} with input as write_to(ref)
	}
}

# A branch merely named like a default one is not one.
test_a_write_to_a_lookalike_branch_passes if {
	every ref in ["refs/heads/main-old", "mainline", "refs/tags/main", "Main"] {
		count(protected_branches.deny) == 0 with input as write_to(ref)
	}
}

test_a_write_to_a_feature_branch_passes if {
	count(protected_branches.deny) == 0 with input as write_to("refs/heads/feature/x")
}

test_a_read_of_a_default_branch_passes if {
	count(protected_branches.deny) == 0 with input as {"tool": {"name": "repos.read_file", "access": "read"}, "resource": {"ref": "main"}}
}

test_a_write_naming_no_ref_is_left_to_the_grant if {
	count(protected_branches.deny) == 0 with input as {"tool": {"name": "issues.comment", "access": "write"}, "resource": {}}
}
