import { createHash } from 'node:crypto';
import { appConnection, appGrant, checkWithCredential, credentialWorld, type CredentialWorld } from '../credentials-minting/world';
import { grantctl as runGrantctl, type GrantctlRun } from '../support/grantctl';

/**
 * `grantctl calls <grantId> --credential <fingerprint>`: from a leaked minted token's fingerprint,
 * every call that received it, and no other; against the service with a GitHub App whose API is the
 * local GitHub held to GitHub's published contract.
 */
let world: CredentialWorld;

beforeAll(async () => {
  world = await credentialWorld();
});
afterAll(() => world.close());

const grantctl = (args: string[]) => runGrantctl(args, { url: world.service.baseUrl, token: world.alice.token });
const json = (run: GrantctlRun) => {
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
};
const fingerprintOf = (token: string) => `sha256:${createHash('sha256').update(token).digest('hex').slice(0, 16)}`;

it('lists the calls that received the token of a fingerprint; a malformed fingerprint is refused, named', async () => {
  const connection = await appConnection(world, world.alice);
  expect(connection.status).toBe(201);
  const { id: grantId } = await appGrant(world, connection.body.id);
  const api = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'README.md' });
  const again = await checkWithCredential(world, grantId, { repository: 'acme/api', path: 'docs/a.md' }); // the same token, reused
  const web = await checkWithCredential(world, grantId, { repository: 'acme/web', path: 'README.md' }); // another repository, another token
  for (const check of [api, again, web]) expect(check.body).toMatchObject({ decision: 'allow', credential: { token: expect.any(String) } });
  expect(again.body.credential.token).toBe(api.body.credential.token);
  expect(web.body.credential.token).not.toBe(api.body.credential.token);

  const leaked = fingerprintOf(api.body.credential.token);
  const found = json(await grantctl(['calls', grantId, '--credential', leaked, '--json']));
  expect(found.items.map((call: { id: string }) => call.id).sort()).toEqual([api.body.callId, again.body.callId].sort());
  expect(found.items.every((call: { credential: { fingerprint: string } }) => call.credential.fingerprint === leaked)).toBe(true);
  const all = json(await grantctl(['calls', grantId, '--json']));
  expect(all.items).toHaveLength(3);
  // Never the token itself, only its fingerprint.
  expect(JSON.stringify(all)).not.toContain(api.body.credential.token);

  const malformed = await grantctl(['calls', grantId, '--credential', 'ghs_not-a-fingerprint']);
  expect(malformed).toMatchObject({ code: 1, stdout: '' });
  expect(JSON.parse(malformed.stderr)).toMatchObject({
    status: 400,
    code: 'invalid_request',
    fault: expect.stringContaining('credential'),
  });
});
