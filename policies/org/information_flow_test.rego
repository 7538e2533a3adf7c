package org.broker.check.information_flow_test

import data.org.broker.check.information_flow

private := ["acme/secret-*", "acme/payroll"]

public := ["acme/website", "oss/*"]

call(access, repository, labels) := {
	"tool": {"name": "repos.call", "access": access},
	"resource": {"repository": repository},
	"session": {"labels": labels, "calls": {}},
}

test_a_read_of_a_private_repository_labels_the_tree if {
	information_flow.labels == {"private_data"} with input as call("read", "acme/secret-keys", {})
		with data.org.private_repositories as private
}

test_a_read_of_another_repository_labels_nothing if {
	count(information_flow.labels) == 0 with input as call("read", "acme/api", {})
		with data.org.private_repositories as private
}

test_a_write_of_a_private_repository_labels_nothing if {
	count(information_flow.labels) == 0 with input as call("write", "acme/payroll", {})
		with data.org.private_repositories as private
}

test_a_public_write_after_a_private_read_is_denied if {
	every repository in ["acme/website", "oss/tool"] {
		information_flow.deny == {{
			"reason": "information_flow",
			"message": "this agent read a private repository; it may not write to a public one",
		}} with input as call("write", repository, {"private_data": 1000})
			with data.org.public_repositories as public
	}
}

test_a_tree_whose_labels_were_lost_is_refused_too if {
	count(information_flow.deny) == 1 with input as call("write", "oss/tool", {"labels_lost": 1000})
		with data.org.public_repositories as public
}

test_a_public_write_without_a_private_read_passes if {
	count(information_flow.deny) == 0 with input as call("write", "oss/tool", {})
		with data.org.public_repositories as public
}

test_a_private_write_after_a_private_read_passes if {
	count(information_flow.deny) == 0 with input as call("write", "acme/api", {"private_data": 1000})
		with data.org.public_repositories as public
}

test_a_public_read_after_a_private_read_passes if {
	count(information_flow.deny) == 0 with input as call("read", "oss/tool", {"private_data": 1000})
		with data.org.public_repositories as public
}

test_nothing_is_private_or_public_until_listed if {
	count(information_flow.labels) == 0 with input as call("read", "acme/secret-keys", {})
	count(information_flow.deny) == 0 with input as call("write", "oss/tool", {"private_data": 1000})
}
