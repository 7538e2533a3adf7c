# METADATA
# title: Resource patterns
# description: |
#   A grant's `resources` name, by dimension, the patterns of what its tools may
#   touch. `*` matches within one `/`-separated segment; in paths a whole segment `**` matches
#   across segments, and a last segment `/**` the folder itself too (`docs/**`: the folder `docs`
#   and everything in it, so a listing of `docs` is within it). The grants domain refuses every
#   other glob syntax before a pattern is stored, so `glob.match` with `/` as the delimiter is
#   exactly these semantics, with the folder rule on top.
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

# `docs/**`: one `**`, as the last segment: what is in the folder, and the folder itself.
matches(pattern, value) if {
	endswith(pattern, "/**")
	indexof(pattern, "*") == count(pattern) - 2
	startswith(value, trim_suffix(pattern, "**"))
}

matches(pattern, value) if {
	endswith(pattern, "/**")
	indexof(pattern, "*") == count(pattern) - 2
	value == trim_suffix(pattern, "/**")
}

# Anything else (`api-*-v2`, `docs/**/*.md`, several stars): the general matcher.
matches(pattern, value) if {
	not simple(pattern)
	glob.match(pattern, ["/"], value)
}

# The folder of a general pattern ending in `/**` (`docs/*/**` holds `docs/api`).
matches(pattern, value) if {
	not simple(pattern)
	endswith(pattern, "/**")
	glob.match(trim_suffix(pattern, "/**"), ["/"], value)
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

# A parent ending in `/**` holds its folder too: a child within the folder's own pattern (`docs`
# under `docs/**`) is within the parent. Not a child ending in `/**` itself: its own folder would
# have to be within the parent's folder's folder, which the parent does not hold (`a/**` under
# `**/**/**`); the rule above judges those.
covers(parent, child) if {
	endswith(parent, "/**")
	not endswith(child, "/**")
	glob.match(trim_suffix(parent, "/**"), ["/", "\u0002"], symbolic(child))
}

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
#   A value is matched only in its canonical spelling, so no pattern can be walked
#   out of with `..`, a doubled `/` or a `\` that a connector or a code host would normalise.
#   `dimension` is a key of the call's `resource`: `repository`, `ref` or `path`. Beyond the
#   contract's rules, a percent-encoded `.`, `/`, `\` or control character is refused too: a
#   connector that decodes before it sends would otherwise make one of the spellings refused here.
canonical("repository", value) if {
	parts := split(value, "/")
	count(parts) == 2
	every part in parts {
		count(part) > 0
		count(part) <= 100
		trim_left(part, repository_characters) == ""
		part != "."
		part != ".."
	}
}

# git's check-ref-format, one-level names (`main`) included.
canonical("ref", value) if {
	value != ""
	value != "@"
	within_bytes(value, 1024)
	ref_characters_only(value)
	not contains(value, "..")
	not contains(value, "//")
	not contains(value, "@{")
	not percent_encoded_separator(value)
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
	path_characters_only(value)
	not percent_encoded_separator(value)
	every segment in split(value, "/") {
		segment != ""
		segment != "."
		segment != ".."
	}
}

# No regular expression, no set or array literal: in the WASM module a pattern is compiled, and a
# literal built, anew on every evaluation (three regular expressions here cost a check ten times
# the rest of its policy; a `trim` over the allowed characters or a search for each forbidden
# one, two to four times this).
# The module's trim looks each character up in the cut set from its start: the usual characters
# of a repository's name come first (half the cost of a name in upper case first). A part is made
# of them when trim_left leaves nothing; trim would only look again from the right.
repository_characters := "abcdefghijklmnopqrstuvwxyz0123456789-_.ABCDEFGHIJKLMNOPQRSTUVWXYZ"

path_characters_only(value) if {
	not contains(value, "\\")
	free_of_controls(value)
}

ref_characters_only(value) if {
	not contains(value, "\\")
	not contains(value, " ")
	not contains(value, "~")
	not contains(value, "^")
	not contains(value, ":")
	not contains(value, "?")
	not contains(value, "*")
	not contains(value, "[")
	free_of_controls(value)
}

# No C0 control, DEL or C1 control: one pass over the characters, compared as strings.
free_of_controls(value) if {
	every character in split(value, "") {
		not control(character)
	}
}

control(character) if character < " "

control("\u007f")

control(character) if {
	character >= "\u0080"
	character <= "\u009f"
}

# A percent-encoded control character, `.`, `/` or `\`: the common value has no `%` at all.
percent_encoded_separator(value) if {
	contains(value, "%")
	lowered := lower(value)
	some encoded in percent_encoded
	contains(lowered, encoded)
}

percent_encoded := {
	"%00", "%01", "%02", "%03", "%04", "%05", "%06", "%07", "%08", "%09", "%0a", "%0b",
	"%0c", "%0d", "%0e", "%0f", "%10", "%11", "%12", "%13", "%14", "%15", "%16", "%17",
	"%18", "%19", "%1a", "%1b", "%1c", "%1d", "%1e", "%1f", "%7f", "%2e", "%2f", "%5c",
}

# The UTF-8 length of a string is at most 4 bytes a code point; past that, it is read off the
# value's base64 (3 bytes every 4 characters, less the padding): Rego counts code points.
within_bytes(value, limit) if count(value) * 4 <= limit

within_bytes(value, limit) if {
	count(value) * 4 > limit
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
