package org.broker.check.repository_allowlist_test

import data.org.broker.check.repository_allowlist

on(repository) := {"resource": {"repository": repository}}

test_allowlisted_repositories_pass if {
	every repository in ["acme/api", "acme/web", "acme-labs/docs"] {
		count(repository_allowlist.deny) == 0 with input as on(repository)
	}
}

test_other_repositories_are_denied if {
	every repository in ["evil/api", "acme-labs/api", "acme/api/extra"] {
		[d.reason | some d in repository_allowlist.deny] == ["repository_not_allowlisted"] with input as on(repository)
	}
}

test_a_call_naming_no_repository_is_left_to_the_grant if {
	count(repository_allowlist.deny) == 0 with input as {"resource": {}}
}
