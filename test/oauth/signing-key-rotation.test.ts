import { ManualClock } from '../support/clock';
import { startOAuthService } from '../support/oauth';
import { ownDatabase } from '../support/own-database';
import type { TestService } from '../support/service';

/**
 * The authorization server's signing keys across replicas: a replica that starts after the key's
 * rotation period makes a new key and signs with it; every replica's `jwks_uri` publishes the keys
 * as stored, so a gateway that fetches the key set from whichever replica a load balancer picks
 * finds the key any of them signs with. A database of its own: the rotation would otherwise change
 * the keys other files' services sign with.
 */
const database = ownDatabase('oauth_rotation');
const DATABASE_URL = database.url;
const ROTATION_MS = 3_600_000;
const clock = new ManualClock();
const started: TestService[] = [];

beforeAll(() => database.migrated());
afterAll(async () => {
  for (const service of started) await service.close();
  await database.drop();
});

const replica = async () => {
  const service = await startOAuthService({ DATABASE_URL, OAUTH_SIGNING_KEY_ROTATION_MS: String(ROTATION_MS) }, { clock });
  started.push(service);
  return service;
};

async function keySet(service: TestService): Promise<{ type: string; kids: string[]; keys: Array<Record<string, unknown>> }> {
  const answer = await fetch(`${service.baseUrl}/oauth/jwks`);
  expect(answer.status).toBe(200);
  const { keys } = (await answer.json()) as { keys: Array<Record<string, unknown>> };
  return { type: answer.headers.get('content-type') ?? '', kids: keys.map((key) => String(key.kid)), keys };
}

it('a replica started before another rotated the key publishes the new key too, and never a private part', async () => {
  const first = await replica();
  const before = await keySet(first);
  expect(before.kids).toHaveLength(1);
  expect(before.type).toMatch(/^application\/jwk-set\+json/);
  const metadata = (await (await fetch(`${first.baseUrl}/.well-known/oauth-authorization-server`)).json()) as { jwks_uri: string };
  expect(new URL(metadata.jwks_uri).pathname).toBe('/oauth/jwks');

  // A later replica, past the rotation period: a new key, the previous one kept for what it signed.
  clock.advance(ROTATION_MS + 1_000);
  const second = await replica();
  const rotated = await keySet(second);
  expect(rotated.kids).toHaveLength(2);
  expect(rotated.kids[1]).toBe(before.kids[0]);

  // The first replica publishes the same set, the new key first (it signs with the one it started with).
  expect((await keySet(first)).kids).toEqual(rotated.kids);
  for (const key of rotated.keys) {
    expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
  }
});

it('answers HEAD without a body and refuses other methods as oidc-provider does', async () => {
  const [service] = started;
  const head = await fetch(`${service!.baseUrl}/oauth/jwks`, { method: 'HEAD' });
  expect(head.status).toBe(200);
  expect(await head.text()).toBe('');
  const post = await fetch(`${service!.baseUrl}/oauth/jwks`, { method: 'POST' });
  expect(post.status).toBeGreaterThanOrEqual(400);
  expect(post.status).toBeLessThan(500);
});
