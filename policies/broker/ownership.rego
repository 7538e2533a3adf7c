# METADATA
# title: Broker ownership
# description: |
#   Only a grant's own broker may check calls on it or report their outcomes. Any
#   other broker learns nothing, not even that the grant exists. Shared by broker.check and
#   broker.outcome; nothing here is an entrypoint.
package broker.ownership

owned_by(grant, broker_id) if grant.broker_id == broker_id
