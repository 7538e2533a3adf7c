# METADATA
# title: Org policy findings
# description: |
#   The security team's own packages, `org.<decision>.<name>` (for example
#   `org.broker.check.protected_branches`), add `deny` and `require_approval` findings, each
#   `{"reason": "...", "message": "..."}`, to the core decisions broker.check, grants.create and
#   grants.attenuate. Each package has a mode, written by the build into
#   `data.org_settings.modes[<decision>][<name>]` from the package's METADATA
#   (`custom: {mode: enforce|shadow|off}`, enforce when unset; a package the build did not list is
#   not read): enforced findings refuse,
#   shadow findings are only reported, and an `off` package is not read at all.
package lib.org

default modes := {}

modes := data.org_settings.modes

mode(decision, name) := object.get(modes, [decision, name], "off")

default rules := {}

# By decision and package: the `rule` id and `unlock` of its METADATA `custom`, as the build wrote them.
rules := data.org_settings.rules

# METADATA
# scope: document
# description: What a package's METADATA says of its denials (`{rule?, unlock?}`), or nothing.
rule_settings(decision, name) := object.get(rules, [decision, name], {})

# METADATA
# scope: document
# description: |
#   The tools whose count in `input.session.calls` an enforced package of the decision reads
#   (METADATA `custom: {counts: [tool, ...]}`): a check of one of them is charged only if the
#   count it saw is still the tree's.
counted_tools(decision) := {tool |
	some name, mode in modes[decision]
	mode == "enforce"
	some tool in object.get(rules, [decision, name, "counts"], [])
}

# METADATA
# scope: document
# description: The findings of the org packages of one decision (`broker.check`, ...), by their modes.
decision_findings(decision) := findings(decision, denies(decision), approvals(decision))

# Only the packages the build listed, and none that is off: an off package is never evaluated.
denies(decision) := {name: items |
	some name, mode in modes[decision]
	mode != "off"
	path := split(decision, ".")
	items := data.org[path[0]][path[1]][name].deny
}

approvals(decision) := {name: items |
	some name, mode in modes[decision]
	mode != "off"
	path := split(decision, ".")
	items := data.org[path[0]][path[1]][name].require_approval
}

# METADATA
# scope: document
# description: |
#   The labels the org packages of one decision put on an allowed call (`labels contains
#   "private_data"`), sorted: `enforced` ones are kept on the grant's tree, `shadow` ones are
#   only logged.
decision_labels(decision) := {
	"enforced": sort(labels_of(decision, "enforce")),
	"shadow": sort(labels_of(decision, "shadow")),
}

labels_of(decision, wanted) := {label |
	some name, mode in modes[decision]
	mode == wanted
	path := split(decision, ".")
	some label in data.org[path[0]][path[1]][name].labels
}

# METADATA
# scope: document
# description: |
#   The findings of one decision's org packages, from their `deny` and `require_approval` sets
#   (by package name): `{"denials", "approvals", "shadow"}`, each a sorted list of
#   `{"package", "reason", "message"}`; shadow entries also say their `effect`.
findings(decision, denies, approvals) := {
	"denials": sort([f | some f in enforced(decision, denies)]),
	"approvals": sort([f | some f in enforced(decision, approvals)]),
	"shadow": sort([f | some f in shadowed(decision, {"deny": denies, "require_approval": approvals})]),
}

enforced(decision, by_package) := {finding(decision, name, item) |
	some name, items in by_package
	mode(decision, name) == "enforce"
	some item in items
}

shadowed(decision, by_effect) := {object.union(finding(decision, name, item), {"effect": effect}) |
	some effect, by_package in by_effect
	some name, items in by_package
	mode(decision, name) == "shadow"
	some item in items
}

# A finding without a reason still refuses: it is named for its package.
finding(decision, name, item) := {
	"package": concat(".", ["org", decision, name]),
	"reason": object.get(item, "reason", "org_denied"),
	"message": object.get(item, "message", ""),
}

# METADATA
# scope: document
# description: |
#   The reasons a decision reports, in order: the core's by its precedence, then the org
#   denials' (sorted), then `approval_required` (a write under `approve`, or an org rule asking).
ordered_reasons(precedence, reasons, org) := array.concat(
	array.concat([r | some r in precedence; r in reasons], sort({f.reason | some f in org.denials})),
	[r | r := "approval_required"; r in reasons],
)
