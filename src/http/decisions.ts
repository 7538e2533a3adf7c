/**
 * Decisions this service made where the spec and CONTRACT.md are silent. Published as the
 * description of the OpenAPI document so clients read them where they read the API.
 */
export const API_DECISIONS = `
Capability-grant broker for AI agents. Implements the Grant and Agent Runtime Interface and
CONTRACT.md; where both are silent the decisions below apply.

- Query strings are validated like bodies: unknown query parameters are a 400 \`invalid_request\`.
- A route that takes no body accepts none or \`{}\`; anything else is a 400.
- Every problem document carries \`instance\` (the request path); refusals decided by policy also
  list every \`reasons\` code, the first of which (lowest status) is \`code\`.
- \`X-Request-Id\` is echoed, or generated when absent or malformed.
- Pods: \`GET /api/pods/:podId\` and \`GET /api/pods/:podId/members\` are readable by members.
  Admins manage members but only owners add or remove an owner (403 \`owner_role_required\`);
  a pod keeps at least one owner (409 \`last_owner\`); adding a current member is 409 \`member_exists\`.
  Human user ids may not look like service ids (\`agt_…\`, \`pod_…\`, …).
- Installing an agent sets its runtime to \`desiredState: running\`, \`state: starting\` (running
  after its first poll): an installed agent is meant to work. \`runtime-stop\` is the kill switch.
`.trim();
