import { brokerWorld, checkAs, type BrokerWorld } from '../support/broker-world';
import { policyFromSources } from '../support/policy-sources';
import { decisionsWritten, startService, type TestService } from '../support/service';
import { rootGrant } from '../support/world';

/**
 * The org's own mask rule (system.log.mask, the one the decision log applies) decides what of a
 * pending approval's arguments its deciders read: a value it names under `/input/args` reads
 * `**REDACTED**`, whether the rule erases it or upserts a value of its own; the rest is shown.
 */
let service: TestService;
let world: BrokerWorld;

beforeAll(async () => {
  const masked = policyFromSources('masked', {
    files: {
      'system/log.rego': [
        'package system.log',
        '',
        'mask contains "/input/args/token" if input.path == "broker/check/decision"',
        '',
        'mask contains {"op": "upsert", "path": "/input/args/auth/password", "value": "changed"} if {',
        '\tinput.path == "broker/check/decision"',
        '}',
        '',
        '# Only for one tool: the rule sees the check as the decision log does.',
        'mask contains "/input/args/list/1" if input.input.tool.name == "issues.create_comment"',
        '',
        '# Outside the arguments: no concern of the approval.',
        'mask contains "/input/resource" if input.path == "broker/check/decision"',
        '',
      ].join('\n'),
    },
  });
  service = await startService({ POLICY_WASM_PATH: `${masked}.wasm`, DECISION_LOG: 'all' });
  world = await brokerWorld(service);
}, 120_000);
afterAll(async () => {
  await service.close();
});

it('reads what the rule names as **REDACTED**, and the rest as it was', async () => {
  const grant = await rootGrant(
    service,
    world.owner,
    world.connectionId,
    { kind: 'pod', id: world.podId },
    {
      tools: ['issues.create_comment'],
      writeMode: 'approve',
    },
  );
  const args = { body: 'visible', token: 'tok-SECRET-1', auth: { user: 'me', password: 'pw-SECRET-2' }, list: ['a', 'SECRET-3', 'c'] };
  const asked = await checkAs(service, world, grant.id, world.agent, { tool: 'issues.create_comment', args });
  expect(asked.body.decision).toBe('approval_required');
  const read = await service.http.get(`/api/approvals/${asked.body.approvalId}`).set(world.owner.auth).expect(200);
  expect(read.body.args).toEqual({
    body: 'visible',
    token: '**REDACTED**',
    auth: { user: 'me', password: '**REDACTED**' },
    list: ['a', '**REDACTED**', 'c'],
  });
  await decisionsWritten();
  expect(service.logs.filter((line) => line.includes('SECRET'))).toEqual([]);
});
