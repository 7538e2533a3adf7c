# METADATA
# title: The organisation's repositories, by visibility
# description: |
#   Patterns (as a grant's `repositories`: `owner/name`, `owner/*`) of the repositories whose
#   contents are private, and of those anything written to is public. Read by the example
#   org rule information_flow; empty until a security team fills them in.
package org

private_repositories := []

public_repositories := []
