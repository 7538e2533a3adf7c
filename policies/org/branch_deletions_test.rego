package org.broker.check.branch_deletions_test

import data.org.broker.check.branch_deletions

call(tool, calls) := {"tool": {"name": tool, "access": "write"}, "session": {"labels": {}, "calls": calls}}

test_the_first_three_deletions_pass if {
	count(branch_deletions.deny) == 0 with input as call("repos.delete_branch", {})
	every n in [0, 1, 2] {
		count(branch_deletions.deny) == 0 with input as call("repos.delete_branch", {"repos.delete_branch": n})
	}
}

test_the_fourth_is_denied if {
	every n in [3, 4, 50] {
		branch_deletions.deny == {{
			"reason": "branch_deletions_exhausted",
			"message": "this agent's grants have deleted three branches in their budget window",
		}} with input as call("repos.delete_branch", {"repos.delete_branch": n})
	}
}

test_other_tools_are_not_counted_against_it if {
	count(branch_deletions.deny) == 0 with input as call("repos.push", {"repos.delete_branch": 9, "repos.push": 9})
}
