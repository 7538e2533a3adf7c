# METADATA
# title: Agent runtime access
# description: |
#   What an installed agent may reach with its runtime token: the context of the pod
#   it is installed in, and its own events. Anything else looks like it does not exist (404), so an
#   agent learns nothing about other pods or other agents' events.
#
#   Input: policies/schemas/runtime/access.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.runtime.access
package runtime.access

pod_actions := {"pod.context"}

event_actions := {"event.ack"}

# METADATA
# title: decision
# description: The runtime access decision, `{allow, reasons}`; reasons are API error codes.
# entrypoint: true
default decision := {"allow": false, "reasons": ["unknown_action"]}

decision := {"allow": count(reasons) == 0, "reasons": sort(reasons)} if known_action

known_action if input.action in pod_actions

known_action if input.action in event_actions

# An agent token authenticates one seat in one pod: that pod is the only one it may read.
installed_in_pod if input.pod.id == input.caller.pod_id

owns_event if input.event.agent_id == input.caller.agent_id

reasons contains "not_found" if {
	input.action in pod_actions
	not installed_in_pod
}

reasons contains "not_found" if {
	input.action in event_actions
	not owns_event
}
