import { signedPolicyEnv } from '../support/policy-bundles';
import { bearer, startedService, startService } from '../support/service';
import { broker, human, installAgent, podWith } from '../support/world';

/**
 * GET /api/policy/status, the console's policy page: what is serving and how it got there, for
 * people signed in (the `policy/status` decision); agents and brokers learn nothing.
 */
const service = startedService();

describe('GET /api/policy/status', () => {
  it('shows a person the revision, source, signature, org packages with their modes, and no error', async () => {
    const person = human(service);
    const answer = await service.http.get('/api/policy/status').set(person.auth).expect(200);
    expect(answer.body).toMatchObject({
      revision: service.deps.policy.revision,
      source: expect.stringContaining('policy.wasm'),
      signature: 'unsigned',
      lastError: null,
    });
    const packages = answer.body.orgPackages as Array<{ decision: string; name: string; mode: string; shadowDisagreements: number }>;
    expect(packages).toEqual(
      expect.arrayContaining([
        {
          decision: 'broker.check',
          name: 'protected_branches',
          mode: expect.stringMatching(/^(enforce|shadow|off)$/),
          shadowDisagreements: 0,
        },
        { decision: 'broker.check', name: 'working_hours', mode: 'off', shadowDisagreements: 0 },
      ]),
    );
  });

  it('is a 404 for an installed agent and a broker, and a 401 without a credential', async () => {
    const owner = human(service, 'owner');
    const podId = await podWith(service, owner);
    const agent = await installAgent(service, owner, podId, 'status-bot');
    const registered = await broker(service, 'status-broker');
    for (const auth of [agent.auth, registered.auth]) {
      const answer = await service.http.get('/api/policy/status').set(auth);
      expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 404, code: 'not_found' });
    }
    await service.http.get('/api/policy/status').expect(401);
    await service.http.get('/api/policy/status').set(bearer('not-a-token')).expect(401);
  });

  it('says the signature was verified when the policy came in a signed bundle', async () => {
    const signed = await startService(signedPolicyEnv());
    try {
      const answer = await signed.http.get('/api/policy/status').set(human(signed).auth).expect(200);
      expect(answer.body).toMatchObject({ signature: 'verified', source: expect.stringContaining('signed.tar.gz'), lastError: null });
    } finally {
      await signed.close();
    }
  });
});
