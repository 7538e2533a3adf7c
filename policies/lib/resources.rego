# METADATA
# title: Resource patterns
# description: |
#   CONTRACT §8: a grant's `resources` name, by dimension, the patterns of what its tools may
#   touch. `*` matches within one `/`-separated segment; in paths a whole segment `**` matches
#   across segments. The grants domain refuses every other glob syntax before a pattern is stored,
#   so `glob.match` with `/` as the delimiter is exactly these semantics.
package lib.resources

# The dimension of a grant's `resources` and the key of the call's `resource` it constrains.
value_key := {"repositories": "repository", "refs": "ref", "paths": "path"}

# METADATA
# scope: document
# description: A concrete value (a repository, a ref, a path) matches one of the patterns.
matches_any(patterns, value) if {
	some pattern in patterns
	matches(pattern, value)
}

# The common shapes are decided with string builtins: glob.match compiles a regular expression on
# every call (the module's heap, and any cache in it, is reset per evaluation).
matches(pattern, value) if {
	not contains(pattern, "*")
	pattern == value
}

# `owner/*`, `refs/heads/feature/*`: one star, at the end.
matches(pattern, value) if {
	indexof(pattern, "*") == count(pattern) - 1
	prefix := trim_suffix(pattern, "*")
	startswith(value, prefix)
	not contains(substring(value, count(prefix), -1), "/")
}

# `docs/**`: one `**`, as the last segment.
matches(pattern, value) if {
	endswith(pattern, "/**")
	indexof(pattern, "*") == count(pattern) - 2
	startswith(value, trim_suffix(pattern, "**"))
}

# Anything else (`api-*-v2`, `docs/**/*.md`, several stars): the general matcher.
matches(pattern, value) if {
	not simple(pattern)
	glob.match(pattern, ["/"], value)
}

simple(pattern) if not contains(pattern, "*")

simple(pattern) if indexof(pattern, "*") == count(pattern) - 1

simple(pattern) if {
	endswith(pattern, "/**")
	indexof(pattern, "*") == count(pattern) - 2
}

# METADATA
# scope: document
# description: |
#   Every value the child pattern matches is matched by the parent pattern. The child is matched
#   as a string in which its wildcards are symbols: its `*` becomes U+0001, which only a parent `*`
#   or `**` can consume, and its `**` becomes U+0002, a delimiter that only a parent `**` can
#   consume. Patterns never contain either character. Sound: a child it accepts matches nothing
#   the parent does not. Exact without `**`; with `**` it may refuse a true narrowing (a child
#   `a/**` under a parent `**/*`), never accept a widening. Property-tested against a model in
#   test/grants/pattern-containment.property.test.ts.
covers(parent, child) if glob.match(parent, ["/", "\u0002"], symbolic(child))

symbolic(pattern) := replace(replace(pattern, "**", "\u0002"), "*", "\u0001")

# METADATA
# scope: document
# description: |
#   The child's resources are within the parent's: every dimension the parent constrains, the
#   child constrains too, each child pattern covered by a parent pattern. An unconstrained parent
#   holds anything.
within(child, parent) if {
	parent_resources := object.get(parent, "resources", {})
	child_resources := object.get(child, "resources", {})
	every dimension, parent_patterns in parent_resources {
		child_patterns := object.get(child_resources, dimension, [])
		count(child_patterns) > 0
		every child_pattern in child_patterns {
			some parent_pattern in parent_patterns
			covers(parent_pattern, child_pattern)
		}
	}
}

# METADATA
# scope: document
# description: |
#   The constraint (a grant's `resources`) names a dimension the call has no value for:
#   `resource_unknown` (fail closed; the tool declares no pointer for it, or the pointer found no
#   string in `args`).
unknown(constraint, resource) if {
	some dimension, _ in constraint
	not resource[value_key[dimension]]
}

# METADATA
# scope: document
# description: The call's value for a dimension the constraint names matches none of its patterns.
not_allowed(constraint, resource) if {
	some dimension, patterns in constraint
	value := resource[value_key[dimension]]
	not matches_any(patterns, value)
}

# METADATA
# scope: document
# description: |
#   CONTRACT §14: a value is matched only in its canonical spelling, so no pattern can be walked
#   out of with `..`, a doubled `/` or a `\` that a connector or a code host would normalise.
#   `dimension` is a key of the call's `resource`: `repository`, `ref` or `path`. Beyond the
#   contract's rules, a percent-encoded `.`, `/`, `\` or control character is refused too: a
#   connector that decodes before it sends would otherwise make one of the spellings refused here.
canonical("repository", value) if {
	regex.match(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`, value)
	every part in split(value, "/") {
		not part in {".", ".."}
	}
}

# git's check-ref-format, one-level names (`main`) included.
canonical("ref", value) if {
	not value in {"", "@"}
	within_bytes(value, 1024)
	not regex.match(`[\x00-\x20\x7f-\x9f~^:?*\[\\]|\.\.|//|@\{|(?i:%(?:2e|2f|5c|[01][0-9a-f]|7f))`, value)
	not startswith(value, "/")
	not endswith(value, "/")
	not endswith(value, ".")
	every segment in split(value, "/") {
		not startswith(segment, ".")
		not endswith(segment, ".lock")
	}
}

canonical("path", value) if {
	within_bytes(value, 4096)
	not regex.match(`[\x00-\x1f\x7f-\x9f\\]|(?i:%(?:2e|2f|5c|[01][0-9a-f]|7f))`, value)
	every segment in split(value, "/") {
		not segment in {"", ".", ".."}
	}
}

# The UTF-8 length of a string is at most 4 bytes a code point; past that, it is read off the
# value's base64 (3 bytes every 4 characters, less the padding): Rego counts code points.
within_bytes(value, limit) if count(value) * 4 <= limit

within_bytes(value, limit) if {
	count(value) <= limit
	encoded := base64.encode(value)
	padding := count(encoded) - count(trim_right(encoded, "="))
	((count(encoded) / 4) * 3) - padding <= limit
}

# METADATA
# scope: document
# description: A value the call's tool names for a dimension is not in its canonical spelling.
invalid(resource) if {
	some dimension, value in resource
	not canonical(dimension, value)
}

# METADATA
# scope: document
# description: |
#   The patterns of a grant's `resources` that could only match values that are not canonical
#   (`docs/../*`, `refs/heads/*.lock`), as `<dimension>: <pattern>`. A pattern could match a
#   canonical value when one of its spellings with every wildcard filled in is canonical: `*` by
#   one character or by none, `**` by one segment.
unmatchable_patterns(constraint) := {concat(": ", [dimension, pattern]) |
	some dimension, patterns in constraint
	some pattern in patterns
	not some_canonical_spelling(value_key[dimension], pattern)
}

some_canonical_spelling(dimension, pattern) if {
	some filler in ["x", ""]
	canonical(dimension, replace(replace(pattern, "**", "x"), "*", filler))
}

# METADATA
# scope: document
# description: |
#   The distinct constraints of a chain. A child inherits what it does not narrow, so a chain
#   mostly repeats one constraint: each is judged once.
constraints(chain) := {grant.resources | some grant in chain; grant.resources}
