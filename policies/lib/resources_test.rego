package lib.resources_test

import data.lib.resources

test_values_match_within_segments if {
	resources.matches_any(["acme/*"], "acme/api")
	resources.matches_any(["acme/api-*"], "acme/api-v2")
	not resources.matches_any(["acme/*"], "acme/api/extra")
	not resources.matches_any(["acme/*"], "other/api")
	resources.matches_any(["docs/**"], "docs/a/b.md")
	not resources.matches_any(["docs/*"], "docs/a/b.md")
	resources.matches_any(["refs/heads/feature/*"], "refs/heads/feature/x")
}

# Each row: parent, child, whether every value the child matches, the parent matches.
containment := [
	["acme/*", "acme/api", true],
	["acme/*", "acme/api-*", true],
	["acme/*", "acme/*", true],
	["acme/api", "acme/*", false],
	["acme/api-*", "acme/*", false],
	["acme/*-api", "acme/x*-api", true],
	["acme/*-api", "acme/*", false],
	["*/*", "acme/api", true],
	["acme/*", "other/*", false],
	["*a*", "*", false],
	["*a*", "x*a", true],
	["docs/**", "docs/*/x.md", true],
	["docs/**", "docs/**", true],
	["docs/*", "docs/**", false],
	["**", "a/**", true],
	["a/**", "**", false],
	["docs/**/*.md", "docs/api/*.md", true],
	["docs/**/*.md", "docs/api/*", false],
	["refs/heads/*", "refs/heads/feature/*", false],
]

default covered(_, _) := false

covered(parent, child) if resources.covers(parent, child)

test_pattern_containment if {
	every row in containment {
		covered(row[0], row[1]) == row[2]
	}
}

test_a_child_within_its_parent if {
	resources.within({"resources": {"repositories": ["acme/api"], "paths": ["docs/*"]}}, {"resources": {"repositories": ["acme/*"]}})
	resources.within({}, {})
	resources.within({"resources": {"repositories": ["x/y"]}}, {})
}

test_a_child_beyond_its_parent if {
	not resources.within({"resources": {"repositories": ["acme/*"]}}, {"resources": {"repositories": ["acme/api"]}})
	not resources.within({}, {"resources": {"repositories": ["acme/api"]}})
	not resources.within({"resources": {"paths": ["a"]}}, {"resources": {"repositories": ["acme/api"]}})
	not resources.within({"resources": {"repositories": ["acme/api", "evil/x"]}}, {"resources": {"repositories": ["acme/*"]}})
}

test_a_call_on_its_resources if {
	constraint := {"repositories": ["acme/*"], "refs": ["refs/heads/*"]}
	not resources.unknown(constraint, {"repository": "acme/api", "ref": "refs/heads/x"})
	not resources.not_allowed(constraint, {"repository": "acme/api", "ref": "refs/heads/x"})
	resources.unknown(constraint, {"repository": "acme/api"})
	resources.not_allowed(constraint, {"repository": "acme-x/api", "ref": "refs/heads/x"})
	not resources.unknown({}, {})
	not resources.not_allowed({}, {"repository": "anything/at-all"})
}

test_the_shapes_of_patterns_match_alike if {
	resources.matches_any(["acme/api"], "acme/api")
	not resources.matches_any(["acme/api"], "acme/ap")
	resources.matches_any(["acme/*"], "acme/")
	not resources.matches_any(["acme/*"], "acmex/api")
	resources.matches_any(["docs/**"], "docs/")
	not resources.matches_any(["docs/**"], "docs")
	resources.matches_any(["a*b/c"], "axxb/c")
	not resources.matches_any(["a*b/c"], "ax/b/c")
}

test_a_chain_judges_each_distinct_constraint_once if {
	resources.constraints([{"resources": {"paths": ["a"]}}, {"resources": {"paths": ["a"]}}, {}]) == {{"paths": ["a"]}}
}
