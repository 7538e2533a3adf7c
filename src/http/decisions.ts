/**
 * Decisions this service made where the interface it implements is silent. Published as the
 * description of the OpenAPI document so clients read them where they read the API.
 */
export const API_DECISIONS = `
Capability-grant broker for AI agents. Implements the grant and agent runtime interface that the
repository's docs/interface.md describes; the decisions below settle what it leaves open.

- Query strings are validated like bodies: unknown query parameters are a 400 \`invalid_request\`.
- A route that takes no body accepts none or \`{}\`; anything else is a 400.
- JSON bodies are UTF-8; one leading byte order mark (U+FEFF) is ignored on every route, the broker
  check's included, as RFC 8259 §8.1 lets a parser: it carries nothing, the body parses to the same
  value with it or without, and a call's digest is of that value. A second one, or one after
  whitespace, is not JSON: 400 \`invalid_request\`. Senders should not write one.
- Every problem document carries \`instance\` (the request path); refusals decided by policy also
  list every \`reasons\` code, the first of which (lowest status) is \`code\`.
- \`X-Request-Id\` is echoed, or generated when absent or malformed.
- Pods: \`GET /api/pods/:podId\` and \`GET /api/pods/:podId/members\` are readable by members.
  Admins manage members but only owners add or remove an owner (403 \`owner_role_required\`);
  a pod keeps at least one owner (409 \`last_owner\`); adding a current member is 409 \`member_exists\`.
  Human user ids may not look like service ids (\`agt_…\`, \`pod_…\`, …).
- Installing an agent sets its runtime to \`desiredState: running\`, \`state: starting\` (running
  after its first poll): an installed agent is meant to work. \`runtime-stop\` is the kill switch.
- Runtime: \`runtime-start\` and \`runtime-stop\` answer 200 with the runtime status
  \`{desiredState, state, changedAt, lastPolledAt}\`. A repeat (already running, already stopped)
  changes nothing, not even \`changedAt\`, and sends no event. Any poll of events sets
  \`lastPolledAt\` and turns \`starting\` into \`running\`; a stopped agent's poll leaves it stopped.
- Agent record \`PATCH\`: \`displayName\` and \`description\` only; \`null\` clears one; \`{}\` or the
  current values change nothing and send no event; a real change sends \`agent.updated\` to that
  agent alone.
- Events are for one agent each. \`runtime.*\` and \`agent.updated\` go to the agent concerned;
  \`pod.member_*\` to the pod's other installed agents. Event \`data\`: member events
  \`{podId, memberId, kind, role?, name?}\`; \`agent.updated\` \`{agentId, name, displayName,
  description, changed, updatedBy}\`; runtime events \`{agentId, name, desiredState, state,
  requestedBy}\`.
- Event polling returns \`{items, nextCursor: null}\` (poll again for more), oldest first by event
  id (time-ordered). \`deliveryCount\` is 1 on the first delivery. \`waitMs\` (0..20000, default 0)
  long-polls; the wait ends early when an event arrives. Acking an event that retention already
  deleted is a 404, like any unknown event.
- Retention: acknowledged events are deleted \`EVENT_RETENTION_MS\` (default 7 days) after their
  ack; unacknowledged events are kept until acked or until the agent is uninstalled.
- An agent token authenticates one seat, so \`installations\` and \`pods\` list one item. The pod
  context's \`grants\` are the active grants the agent can read whose effective audience contains
  it; \`members\` are every current member, oldest first.
- Grants, create: a connection is visible to its owner alone, so an unknown \`connectionId\` and
  someone else's connection are the same 404 \`not_found\`, which lists no reason (it would tell
  that the connection exists). A disconnected connection is a
  422 \`connection_disconnected\`. \`installationId\`/\`brokerId\` are a 400 \`server_derived_field\`
  checked before any other validation. An unknown target kind, an unknown pod or seat, and a pod
  the owner is not in are all 422 \`target_not_allowed\`. \`budget\` fields are each optional
  (\`calls\` 1..10^9, \`windowMs\` 1..365 days); \`tools\` and \`audience\` must not repeat a name.
  A seat grant's \`audience\` may only list the seat (else \`audience_not_member\`); it is stored as
  \`audienceMode: listed\`, \`[seatId]\`. \`target\` in the record is \`{kind, id}\`.
- Grants, record: \`grantedBy\` is the connection owner who created the root, on every grant of
  the tree (children too); the attenuating agent is kept server-side only.
- Grants, read and list: \`GET /api/pods/:podId/grants\` is for current pod members (humans and
  agents); anyone else, including a connection owner who left the pod, gets 404 there (the owner
  still reads each grant by id). Items are filtered grant by grant by the read scope; \`status\`
  filters on the status computed at read time. Lists are newest first by \`createdAt\` (calls by
  \`requestedAt\`), ties by id; a cursor this service did not issue is a 400.
- Pods and connections, list: \`GET /api/pods\` and \`GET /api/connections\` take a person's
  token only (an agent's is a 403 \`credential_not_accepted\`; its pods are
  \`/api/agents/runtime/pods\`). Pods are the caller's memberships, newest pod first, each with the
  caller's \`role\`; connections are those the caller owns, newest first, with their tools. A
  page may hold fewer than \`limit\` items while \`nextCursor\` is set, should the policy drop a row.
- Grants, attenuate: a caller who can read the parent but is not in its effective audience gets
  403 \`principal_not_in_audience\`; a reader that is an agent of another pod (cannot happen with
  today's read scope) 403 \`not_installed_agent\`; an agent that cannot read it 404. A stopped
  runtime is 409 \`runtime_stopped\`. A parent that is revoked, expired (also by an ancestor) or whose
  connection is disconnected is 422 \`grant_not_usable\`. \`grant_widening\`'s \`detail\` names every
  widening field (\`tools\`, \`writeMode\`, \`budget.calls\`, \`budget.windowMs\`, \`expiresAt\`,
  \`resources\`, \`audience\`, \`target\`); a write tool under \`writeMode: read\` counts as widening
  \`tools\`; \`writeMode\` narrows \`write\` → \`approve\` → \`read\`.
  \`budget\` fields may be given one at a time (the other is inherited). Narrowing to a seat makes
  the audience \`[seatId]\`. Depth: the root is 0 and a child's depth may not exceed
  \`MAX_DELEGATION_DEPTH\` (default 8), else 422 \`delegation_too_deep\`. A grant has at most
  \`MAX_LIVE_CHILDREN_PER_GRANT\` (default 100) children neither revoked nor expired, else 422
  \`too_many_children\`; an agent makes at most \`ATTENUATION_RATE_LIMIT\` (default 60) attenuation
  requests per \`ATTENUATION_RATE_WINDOW_MS\` (default 60 s), counted whatever their outcome,
  else 429 \`rate_limited\` with \`Retry-After\` (seconds). The 201 shows the child
  even when its maker cannot read it afterwards (a seat grant for another seat).
- Grants, revoke: a member who can read the grant but does not own its connection gets 403
  \`not_connection_owner\`; anyone else 404. Already-revoked descendants keep their earlier
  \`revokedAt\`. Revocation and attenuation lock the tree's root row, so they serialise per tree.
- Grant events: \`grant.created\` and \`grant.attenuated\` carry \`{grant}\` (the record; attenuated
  also \`parentId\`); \`grant.revoked\` is one event per revoked grant, \`{grantId, rootId, revokedAt,
  cascadedFrom}\`. Each goes to the installed agents that can read that grant (the pod's agents for
  a pod grant, the seat for a seat grant).
- Broker check: only the grant's own broker may check or report (another broker's grant, an
  unknown grant or call: 404 \`not_found\`, nothing recorded; \`not_found\` never appears as a 200
  deny). Order: the broker token (401), then the body (400/415), then ownership, then the rest.
  For another broker's grant nothing else is looked at (not the subject token, the approval or
  the tree's Redis state), so its 404 cannot differ from an unknown grant's, whatever fails.
  \`args\` is a JSON object, required (\`{}\` for none). Exactly one of \`subjectToken\` and
  \`principal\`. A \`subjectToken\` that does not verify (unknown, expired, deleted, or a broker
  token) is a 401 \`subject_token_invalid\` and nothing is recorded (there is no principal to
  record). A broker-asserted \`principal\` is a 403 \`principal_assertion_refused\` unless the
  deployment sets \`BROKER_TRUST_ASSERTED_PRINCIPAL=true\`.
- Human JWTs in production (JWT_JWKS_URI): a key set that cannot be fetched is a 503
  \`dependency_unavailable\`, a kid it does not hold a 401. Keys are cached per kid; past 10 fetches
  a minute a lookup is judged by the last fetch: failed, 503; answered, the kid is looked up in
  what it brought (absent: 401).
- Broker check answer: \`reason\` is \`allowed\` on an allow. On a deny with several reasons, the
  first of revoked, expired, connection_disconnected, tool_not_allowed, write_not_allowed,
  resource_invalid, resource_unknown, resource_not_allowed, principal_not_in_audience, runtime_stopped,
  approval_mismatch, approval_denied, approval_used, approval_expired, approval_pending; then the
  reasons of enforced org rules (sorted); last approval_required, answered as
  \`decision: approval_required\`. budget_exhausted only when the policy allows. A deny whose reason
  is an org rule's carries that rule's \`message\` when it has one. \`budget.remaining\` is the
  least over the chain (0 on budget_exhausted) and \`budget.resetMs\` the time until the oldest
  counted call of that level leaves its window. \`Retry-After\` is \`retryAfterMs\` in seconds,
  rounded up. The principal must be in the effective audience of every grant of the chain; an
  agent principal whose runtime is stopped is denied \`runtime_stopped\`.
- Explained denials: every deny and \`approval_required\` carries \`explanation\`, written by the
  policy (Rego gives the rule id and the level; nothing is guessed). \`level\` is the depth of the
  refusing grant, 0 the root (the chain's index counted from the root), the one nearest the root
  when several refuse; a refusal of the call rather than of a level (a non-canonical value, a
  stopped runtime, an approval, an org rule) names the grant called. A refusal of the budget
  script after the policy allowed (budget_exhausted, an approval another re-send used,
  session_label_limit) is explained by \`broker/charge/decision\`, whose decision event holds it.
- Session labels: an enforced org rule's \`labels\` on an allowed call are kept on the tree's root
  (\`{root}:labels\`, first-seen Redis time, \`SESSION_LABEL_TTL_MS\`) by the budget script only
  when the call is charged; at most 32 live labels a tree (a call that would add one more is
  denied \`session_label_limit\`, nothing taken). \`session.calls\` counts allowed calls per tool in
  the root grant's window, bucketed by a 24th of it (never lower than the truth). A check decided
  on other labels than the tree holds, or on another count of a tool an enforced package declares
  in METADATA \`custom.counts\`, is decided again on the script's answer (its first decision is
  logged too). After Redis lost a tree, its calls per tool are rebuilt from the trail and a
  tree with an allowed call within a label's life is labelled \`labels_lost\` (fail safe).
- Resource values: a value a tool's pointer finds in \`args\` is matched only in
  its canonical spelling, else the check denies \`resource_invalid\` whatever the grant's
  patterns (an unconstrained grant too: a connector would send the value on). A repository is
  \`owner/name\`, each part 1..100 of \`A-Z a-z 0-9 _ . -\` and neither \`.\` nor \`..\`; a ref follows
  git's check-ref-format (one-level names such as \`main\` allowed), at most 1,024 bytes; a path
  is relative and \`/\`-separated with no empty, \`.\` or \`..\` segment, no \`\\\` and no control
  character, at most 4,096 bytes. Beyond the contract, a ref or path holding a percent-encoded
  \`.\`, \`/\`, \`\\\` or control character (\`%2e\`, \`%2F\`, \`%5c\`, \`%00\`) is refused too, since a
  connector that decodes it would make it one of the spellings above. Grant create and attenuate
  refuse, 400 \`resource_pattern_invalid\` with \`errors\` naming each, a pattern that could only
  match values that are not canonical (\`docs/../*\`, \`refs/heads/*.lock\`).
- Numbers: a JSON number that does not fit a double (\`1e999\`, \`-1e400\`) is a 400
  \`invalid_request\` naming its path, in every body and on every route.
- Broker failures: Redis unreachable or slower than \`REDIS_COMMAND_TIMEOUT_MS\`, or the call record
  not written: 503 \`dependency_unavailable\`, nothing allowed (a unit taken for a call whose record
  could not be written is given back). A grant whose facts change on every attempt (4 in a row) is
  also a 503. On a Redis Cluster (\`REDIS_CLUSTER_NODES\`) a node that is down is the same 503 for the
  trees whose slot it serves (for every tree once the cluster declares itself down); a node back
  empty has each of its trees' windows rebuilt from the call trail before any unit is taken.
- Call outcome: \`POST /api/broker/calls/:callId/outcome\` answers 200 with the call record; a second
  report is 409 \`outcome_already_recorded\`; a denied call takes none (409 \`call_denied\`); a report
  more than 24 days after the check is 409 \`outcome_too_late\` (the trail keeps the completion as
  milliseconds after the check in 4 bytes; a record left pending stays pending and counts as allowed).
  \`completedAt\` is the service's clock when the report was taken.
  \`errorCode\` is 1..100 of letters, digits and \`_ . : -\`; \`durationMs\` 0..86400000. The
  \`errorCode\` is kept in the trail for operators; the call record's shape does not change.
- Call record \`approvalId\`: the approval's \`apr_…\` id for an \`awaiting_approval\` call and for
  a call allowed through an approval; null for every other call. \`decisionId\`: the
  \`decision_id\` of the broker/check decision behind the answer, whatever it was (the decision
  log's event of that id, when logged, holds the masked input, the result and the policy
  revision); null only on records written before the service kept it apart from \`approvalId\`.
  \`approvedBy\` is the \`decidedBy\` of the approval the record names, whatever that decision was,
  in the trail and in the answer to an outcome report alike. A held call's record (the check that
  answered \`approval_required\`) reads \`awaiting_approval\` only while its approval is pending:
  then \`approved\`, or \`denied\` with \`reason\` \`approval_denied\`, or \`approval_expired\` once it
  expired undecided (on the service's clock; a revoke expires it). The stored record does not
  change; the approval's state is read with it. Neither \`approved\` nor a held record counts
  against a budget.
- Call trail retention: \`GET /api/grants/:grantId/calls\` lists the records of the whole UTC days
  the deployment keeps (\`CALL_RECORD_RETENTION_DAYS\`, 90 by default); older days are dropped
  whole, after being archived when the operator archives them, except the records of a grant tree
  an operator holds, which stay listed until the hold is released.
- Approvals: \`GET /api/approvals\` lists what the caller may decide (approvals/decide, action
  \`list\`): never the caller's own calls (readable by id, 403 \`self_approval\` to decide), and no
  pending approval of a grant that is revoked or expired; decided, used and expired ones stay as
  history under their \`state\`. \`expired\` is not stored: \`pending\` or \`approved\` past
  \`expiresAt\` (\`APPROVAL_TTL_MS\` after the request, default 15 min, or the grant's own expiry
  when that comes first: an approval never outlives its grant) on the service clock, with no
  sweeper; deciding then is 409 \`approval_expired\`, a re-send is denied \`approval_expired\`.
  Of concurrent re-sends of an approved approval one is allowed; the rest are denied
  \`approval_used\`, their units given back.
  A revoke ends the approvals of every grant it revokes, in its transaction: pending and approved
  ones get \`expiresAt\` = \`revokedAt\` (so they read \`expired\`); pending ones also \`decidedAt\` =
  \`revokedAt\` and \`note: "grant revoked"\` (\`decidedBy\` null); approved ones keep their decider and
  note. Deciding on an approval of a revoked or expired grant is 422 \`grant_not_usable\`, whatever
  the approval's time. A stopped runtime ends nothing: its re-sends are \`runtime_stopped\` while
  stopped, and an unused, unexpired approval still allows its call once after a start. An agent
  credential on these routes is a 403 \`credential_not_accepted\`. When the call's principal is an
  agent it gets \`approval.requested\` \`{approvalId, grantId, callId, tool, expiresAt}\` and
  \`approval.decided\` \`{approvalId, grantId, callId, state, tool}\`; an approval ended by a revoke
  sends none (the agent gets \`grant.revoked\`). \`approvals_total\` counts requested, approved,
  denied and used; \`approval_time_to_decision_seconds\` times each decision.
- The approvals inbox is live by long poll, not server-sent events: \`GET /api/approvals\` takes
  \`requestedAfter\` (strictly after that instant) and \`waitMs\` (0 to 25000), and an answer
  that would be empty waits for an approval of a pod the caller may decide for (woken on every
  replica by a notification at commit, re-checked every 5 s). Past 500 waiting requests on one
  replica a request answers at once instead of waiting, never with a 503.
- Approval arguments: \`args\`, \`argsTooLarge\` and \`argsUnreadable\` are members of an approval
  only for whoever may decide it (approvals/decide, action \`read_args\`: the deciders, never the
  call's own principal), whatever its state; for others, and on the broker's long poll, they are
  absent. \`args\` is the arguments with each value the policy's \`system.log.mask\` names under
  \`/input/args\` (the rule asked about the broker/check decision that asked for the approval, with
  its arguments) replaced by \`"**REDACTED**"\`, an erase and an upsert alike (a rule naming
  \`/input/args\` itself makes \`args\` that string); a mask rule that fails makes the check a 503
  rather than keep anything unmasked. \`args\` is null once the approval is not \`pending\`,
  when the canonical JSON was over 64 KiB (\`argsTooLarge: true\`, kept as history), or when no
  configured key opens the ciphertext (\`argsUnreadable: true\`). A decision, a use and a revoke
  erase the ciphertext in their own statement; an expiry, which no statement marks, is erased by the
  first read of the approval after it and by a sweep every 5 s on every replica.
- Approval webhooks: \`podId\` and \`createdBy\` are members of the record too; listing and reading
  webhooks is for owners and admins like managing them (their URLs may carry a receiver's token),
  a member gets 403 \`not_pod_admin\`. Event types sort and may not repeat. The host of the URL must
  resolve at creation (a name that does not resolve, or resolves to any non-public address, is 400
  \`webhook_target_not_allowed\`). A pod has at most \`WEBHOOK_MAX_PER_POD\` webhooks (10 by default;
  one more is 422 \`too_many_webhooks\`, decided by pods/access): each is one more receiver of every
  approval message, and the cap bounds what one pod's approvals put in the outbox. Messages:
  \`approval.requested\` for every approval (whoever the call's principal), \`approval.decided\` on
  approve and deny (an expiry or a revoke sends none),
  \`data: {approval, consoleUrl}\`; \`consoleUrl\` from \`PUBLIC_URL\`, else the listening address.
  Delivery: at least once; retries after 5 s doubling to at most 1 h, for 24 h from the message's
  creation, then given up (\`webhook_deliveries_total{result}\`); a deleted webhook's pending
  messages are dropped; delivered and given-up messages are deleted after 7 days. Delivery is fair
  across pods: each attempt runs on its own (up to 10 s), a pod has at most 2 attempts in flight
  across every replica and each pod's oldest due message goes before any pod's next one, so a pod
  whose receiver never answers delays only its own messages. A message whose secret no configured
  key opens is not sent (it fails and is retried, then given up).
- Org policies: packages \`org.<decision>.<name>\` for broker.check, grants.create and
  grants.attenuate. A package's mode (\`enforce\`, \`shadow\`, \`off\`) comes from its METADATA
  \`custom.mode\` (enforce when unset) or from \`ORG_POLICY_MODES\` (\`<decision>.<name>=<mode>,…\`),
  which the policy build reads and writes into the bundle; a name it does not know fails the
  build. Switching a mode is a rebuilt policy that the running service reloads (file or bundle
  server), not a restart. An enforced denial of grants.create or grants.attenuate is a 403
  \`org_policy_denied\` with the rule's message as \`detail\`; a \`require_approval\` there is a 403
  \`approval_required\` (a grant request carries no approval). Shadow findings are logged with
  the decision id, never enforced, and counted in \`policy_shadow_disagreements_total\` when the
  decision allowed; org messages are kept out of logs.
- Policy distribution: an OPA bundle from \`POLICY_BUNDLE_PATH\` or
  \`POLICY_BUNDLE_URL\` (\`POLICY_BUNDLE_TOKEN\` as bearer); without either, the development module
  \`POLICY_WASM_PATH\`. With \`POLICY_WATCH\` (default on) a file is re-read when it changes and a
  bundle server is asked every \`POLICY_BUNDLE_POLL_MS\` with \`If-None-Match\` (304: unchanged;
  failures back off up to 5 min). \`.signatures.json\` is verified with
  \`POLICY_BUNDLE_PUBLIC_KEY\` (PEM; several keys for a rotation) or \`POLICY_BUNDLE_SECRET\` (HS*);
  every file must be listed and match. Production starts only with a bundle and a key. A bundle
  unsigned, badly signed, unloadable or lacking an entrypoint in use is refused and logged with
  the refused and kept revisions; the loaded policy keeps serving, and the ETag moves on only
  when a bundle is loaded. So is a signed bundle issued before the serving one (its signed
  \`.manifest\` \`metadata.issued_at\`, written by the build; one without it, or of the same instant
  under another revision, too) unless \`POLICY_BUNDLE_ALLOW_ROLLBACK\`, with
  \`POLICY_BUNDLE_MIN_ISSUED_AT\` as the floor after a restart; and a bundle over
  \`POLICY_BUNDLE_MAX_BYTES\` (16 MiB) downloaded or read, or over four times it unpacked
  (\`policy_bundle_refusals_total{reason}\`).
- Decision logs: \`DECISION_LOG\` \`all\` (default), \`deny\`, \`sampled\` (every denial and
  \`DECISION_LOG_SAMPLE_RATE\` of allows) or \`off\`. Each event is OPA's format with the masked input,
  not a digest: \`args\` replaced by \`**REDACTED**\` (named in \`masked\`), then the policy's own
  \`system.log.mask\` rules applied; org findings in \`result\` lose their messages. A string of
  \`resource\` (read from \`args\`) past 1024 characters is cut to them and \`**TRUNCATED**\`, and
  named in \`masked\`; an event still over 1 MiB is not logged (a warning names its \`decision_id\`).
  Events are written to the service log after the answer; with \`DECISION_LOG_URL\` they are also
  uploaded as gzip JSON batches (\`DECISION_LOG_BATCH_EVENTS\`, every \`DECISION_LOG_FLUSH_MS\`, bearer
  \`DECISION_LOG_TOKEN\`), retried with backoff up to 60 s. What waits is bounded by
  \`DECISION_LOG_BUFFER_EVENTS\` (default 100000) and \`DECISION_LOG_BUFFER_BYTES\` (default 16 MiB
  of event JSON; gauge \`decision_log_buffer_bytes\`), plus the one batch in flight; past either
  bound the oldest are dropped. \`decision_log_dropped_total\` counts drops by \`reason\`:
  \`buffer_full\`, \`event_too_large\`. A check never waits for either.
- Credentials minted per call: a connection's \`app\` names a GitHub App of \`GITHUB_APPS\`; only the
  user the operator bound the installation to (\`npm run admin -- github-app bind\`) may create it,
  and an installation is never rebound to another owner (409 \`installation_bound_to_another_owner\`
  from the admin command). An app installation id is GitHub's, in digits. A tool's \`permissions\`
  use GitHub's names and levels; a \`read\` tool may declare only \`read\`. \`credential: true\` on a
  check answers 422 \`credential_unavailable\` whatever the decision when the connection names no
  app or the tool declares no permissions, and on allow when \`args\` name no \`owner/name\`
  repository. The token is minted after the decision and before the budget unit: when GitHub
  refuses, does not answer within \`GITHUB_TOKEN_TIMEOUT_MS\` or answers more than
  \`GITHUB_RESPONSE_MAX_BYTES\`, the call is recorded as \`denied\` with reason
  \`credential_unavailable\` (no fingerprint), no unit is taken, an approval it carried is not spent,
  and the check answers 503. GitHub's answer must name exactly the call's repository, owner
  included, and no permission beyond those asked for except \`metadata: read\` (which GitHub adds to
  every token); anything else is a 503 and the token is dropped. Tokens are reused per (app,
  installation, repository, permissions) while more than 5 minutes remain, in each replica's
  memory. A denied call gets no token; a budget-denied one may have caused a mint that the next
  allowed call reuses.
- Credential lineage: a call record's \`credential\` is \`{fingerprint, expiresAt}\` (\`sha256:\` and the
  first 16 hex digits of the token's SHA-256) or null; \`GET /api/grants/:grantId/calls?credential=\`
  lists within that grant the calls that received the token.
- The console (\`/console/\`) is the service's own, outside this document: static files under a strict
  Content-Security-Policy, and \`POST /console/session {code}\`, which trades a one-time
  development link's code (\`npm run admin -- console-link\`) for an HS256 human JWT and is a 404
  in production or when \`JWT_JWKS_URI\` is set. With OpenID Connect the console sends the
  issuer's ID token as its bearer token.
- Human JWTs from a JWKS: a person's credential is a token of one issuer (\`JWT_ISSUER\`, else
  \`OIDC_ISSUER\`) meant for this service: an access token whose \`aud\` holds \`JWT_AUDIENCE\`, or an
  ID token whose \`aud\` holds \`OIDC_CLIENT_ID\` and which, when it names several audiences or an
  \`azp\`, was issued to that client (\`azp\`, OpenID Connect Core §3.1.3.7). A token with no \`aud\`,
  another issuer's, another client's ID token or another API's access token is a 401 however
  valid its signature. Production with a JWKS does not start without an issuer and an audience.
- \`GET /api/grants/:grantId/usage\`: \`used\` counts the allowed calls (\`pending\`, \`succeeded\`,
  \`failed\`) through the grant and every grant below it requested within the window ending now,
  as the service rebuilds its windows from the trail; \`liveDescendants\` are those neither revoked
  nor expired, which a revocation of the grant would revoke now. Readable as the grant is.
- \`GET /api/registry/pods/:podId/agents\` lists by name; \`nextCursor\` is the last name listed.
- \`GET /api/policy/status\` is readable by any human (the policy is the deployment's, not a
  tenant's; agents and brokers: 404). \`signature\` is \`verified\` only for a bundle a configured
  key verified; \`shadowDisagreements\` count on the replica that answers, since it started.
`.trim();
