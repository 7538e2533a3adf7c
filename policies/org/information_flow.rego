# METADATA
# title: No publishing what was read in private
# description: |
#   An example org rule, off until switched on. A read of a repository in
#   `data.org.private_repositories` labels the grant's tree `private_data`; from then on
#   (SESSION_LABEL_TTL_MS) a write to a repository in `data.org.public_repositories`, by any
#   grant of the tree on any replica, is denied `information_flow`: an agent that read private
#   data, perhaps with a prompt injected in it, would publish it. A tree whose labels Redis lost
#   carries `labels_lost` instead, which refuses the same writes (fail safe).
# schemas:
#   - input: schema.broker.check
# custom:
#   mode: off
#   rule: org.information_flow
#   unlock: none
package org.broker.check.information_flow

import data.lib.resources

labels contains "private_data" if {
	input.tool.access == "read"
	resources.matches_any(data.org.private_repositories, input.resource.repository)
}

deny contains {
	"reason": "information_flow",
	"message": "this agent read a private repository; it may not write to a public one",
} if {
	input.tool.access == "write"
	resources.matches_any(data.org.public_repositories, input.resource.repository)
	tainted
}

tainted if input.session.labels.private_data

tainted if input.session.labels.labels_lost
