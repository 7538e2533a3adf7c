import { readFileSync } from 'node:fs';
import { GITHUB_APP_PERMISSIONS } from '../../src/github-apps/permission-names';

/**
 * The permission names and levels a tool may declare are GitHub's, as its published OpenAPI
 * description (@octokit/openapi) says: the generated list may not drift from it
 * (`node scripts/gen-github-permissions.mjs` writes it again).
 */
it("names exactly the installation permissions of GitHub's description, at its levels", () => {
  const description = JSON.parse(readFileSync(require.resolve('@octokit/openapi/generated/api.github.com.json'), 'utf8')) as {
    components: { schemas: Record<string, { properties: Record<string, { enum: string[] }> }> };
  };
  const properties = description.components.schemas['app-permissions']!.properties;
  const levels = Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, schema.enum]));
  expect(GITHUB_APP_PERMISSIONS).toEqual(levels);
  expect(Object.keys(levels)).toEqual(expect.arrayContaining(['contents', 'issues', 'pull_requests', 'metadata']));
});
