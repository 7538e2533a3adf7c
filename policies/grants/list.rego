# METADATA
# title: Grant list
# description: |
#   Listing the grants of a pod: members with access to the pod, humans and
#   installed agents. Anyone else learns nothing, not even that the pod exists. Which listed
#   grants the caller sees is then decided grant by grant by data.grants.read.
#   Input: policies/schemas/grants/list.json, the JSON Schema that `opa check` holds this
#   package to (written by the build from src/kernel/decisions).
# schemas:
#   - input: schema.grants.list
package grants.list

# METADATA
# title: decision
# description: '`{allow, reasons}`; reasons are API error codes.'
# entrypoint: true
default decision := {"allow": false, "reasons": ["not_found"]}

decision := {"allow": true, "reasons": []} if input.caller.id in input.pod.members
