# METADATA
# title: Repositories on the allowlist only
# description: |
#   An example org rule, off until switched on: a call that names a repository
#   outside the organisation's allowlist is denied `repository_not_allowlisted`, whatever the
#   grant says. Patterns are those of grants' `resources` (`*` within a segment).
# schemas:
#   - input: schema.broker.check
# custom:
#   mode: off
package org.broker.check.repository_allowlist

import data.lib.resources

allowlist := ["acme/*", "acme-labs/docs"]

deny contains {
	"reason": "repository_not_allowlisted",
	"message": "this repository is not on the organisation's allowlist",
} if {
	repository := input.resource.repository
	not resources.matches_any(allowlist, repository)
}
