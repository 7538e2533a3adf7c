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
	["docs/**", "docs", true],
	["docs/**", "docs/*", true],
	["docs/*", "docs", false],
	["docs/*/**", "docs/**", false],
	["docs/*/**", "docs/api", true],
	["**/**/**", "a/**", false],
	["**/**", "a/**", true],
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
	resources.matches_any(["docs/**"], "docs")
	not resources.matches_any(["docs/**"], "doc")
	not resources.matches_any(["docs/**"], "docsx")
	resources.matches_any(["docs/*/**"], "docs/api")
	not resources.matches_any(["docs/*/**"], "docs")
	resources.matches_any(["a*b/c"], "axxb/c")
	not resources.matches_any(["a*b/c"], "ax/b/c")
}

test_a_chain_judges_each_distinct_constraint_once if {
	resources.constraints([{"resources": {"paths": ["a"]}}, {"resources": {"paths": ["a"]}}, {}]) == {{"paths": ["a"]}}
}

# Canonical spellings, per dimension.
canonical_values := {
	"repository": ["acme/api", "Acme-1/api.v2_x", "a/b", "a.b/..c", concat("", ["o/", repeat("n", 100)])],
	"ref": ["main", "refs/heads/main", "refs/heads/feature/x-1", "refs/tags/v1.2.3", "refs/heads/ünïcode", "v1.lockx"],
	"path": [
		"docs/a.md", "README", ".github/workflows/ci.yml", "docs/...", "docs/..x/.y", "a b/c#d?.md", "docs/100%", "docs/%41",
		"docs/a~\u00a0b",
	],
}

# Hostile spellings: traversal, separators a host would normalise, encodings, controls, git's rules.
hostile_values := {
	"repository": [
		"acme/..", "../api", "./api", "acme/.", "acme", "acme/api/extra", "/acme/api", "acme/api/",
		"acme//api", "acme\\api", "acme/api%2f..", "acme/a%2e", "acme/a\u0000", "acme/ api", "acme/ap\u00ef",
		"", "acme/api\n", concat("", ["o/", repeat("n", 101)]),
	],
	"ref": [
		"", "@", "refs/heads/../main", "refs/heads/a..b", "refs//heads", "/refs/heads/x", "refs/heads/x/",
		"refs/heads/x.", "refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/x@{1}", "refs\\heads",
		"refs/heads/a b", "refs/heads/a~1", "refs/heads/a^", "refs/heads/a:b", "refs/heads/a?", "refs/heads/a*",
		"refs/heads/a[", "refs/heads/\u0001", "refs/heads/\u007f", "refs/heads/\u0085", "refs/heads/%2e%2e",
		"refs/heads%2Fx", "refs/heads/%00", repeat("r", 1025),
		repeat("é", 513),
	],
	"path": [
		"", "/etc/passwd", "..", ".", "docs/..", "docs/../src/key.pem", "docs/../../../../evil/secret/contents/creds.txt",
		"docs/./x", "./docs/x", "docs//x", "docs/", "docs\\..\\x", "docs/\\", "docs/a\u0000", "docs/a\nb",
		"docs/a\u001f", "docs/a\u009b", "docs/a\u0080", "docs/a\u009f", "docs/a\u007f",
		"docs/%2e%2e/x", "docs/%2E%2E/x", "docs%2f..%2fx", "docs/%5c", "docs/%0a",
		repeat("p", 4097),
		repeat("€", 1400),
	],
}

test_canonical_values_are_canonical if {
	every dimension, values in canonical_values {
		every value in values {
			resources.canonical(dimension, value)
		}
	}
}

test_hostile_spellings_are_not_canonical if {
	every dimension, values in hostile_values {
		every value in values {
			not resources.canonical(dimension, value)
		}
	}
}

test_byte_lengths_not_code_points if {
	# 1,365 three-byte characters are 4,095 bytes; one more is 4,098.
	resources.canonical("path", repeat("€", 1365))
	not resources.canonical("path", repeat("€", 1366))
	resources.canonical("path", repeat("p", 4096))
	resources.within_bytes("ab", 2)
	not resources.within_bytes("é", 1)
}

test_a_call_with_a_non_canonical_value_is_invalid if {
	resources.invalid({"repository": "acme/api", "path": "docs/../x"})
	not resources.invalid({"repository": "acme/api", "path": "docs/x"})
	not resources.invalid({})
}

test_patterns_that_could_only_match_non_canonical_values if {
	resources.unmatchable_patterns({
		"repositories": ["acme/*", "acme/..", "*/.", "acme/api-*"],
		"refs": ["refs/heads/*", "refs/heads/*.lock", "refs/heads/.*", "refs//*", "refs/heads/*."],
		"paths": ["docs/**", "docs/../*", "**/..", "docs/*", "*", "a\\b/*"],
	}) == {
		"repositories: acme/..", "repositories: */.",
		"refs: refs/heads/*.lock", "refs: refs/heads/.*", "refs: refs//*", "refs: refs/heads/*.",
		"paths: docs/../*", "paths: **/..", "paths: a\\b/*",
	}
	count(resources.unmatchable_patterns({})) == 0
}

repeat(text, times) := concat("", [text | some _ in numbers.range(1, times)])
