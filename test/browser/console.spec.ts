import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';
import { seedWorld, startConsoleService, type ConsoleService } from './world';

let service: ConsoleService;
let world: Awaited<ReturnType<typeof seedWorld>>;

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  service = await startConsoleService();
  world = await seedWorld(service);
});

test.afterAll(async () => {
  await service?.close();
});

async function signIn(page: Page, userId = world.ownerId) {
  await page.goto(await service.linkFor(userId));
  await expect(page.getByRole('heading', { name: 'Pending approvals' })).toBeVisible();
}

/** No serious or critical accessibility violation on the page as it is now. */
async function accessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);
}

/** Any script the page ran that we did not write would show up as a dialog or a console error. */
function watchForScript(page: Page) {
  const seen: string[] = [];
  page.on('dialog', (dialog) => {
    seen.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on('console', (message) => {
    if (message.type() === 'error') seen.push(`console: ${message.text()}`);
  });
  return seen;
}

test('a one-time link signs in once, and the console answers with a strict policy', async ({ page }) => {
  const link = await service.linkFor(world.ownerId);
  const response = await page.goto(link);
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  await expect(page.getByRole('heading', { name: 'Pending approvals' })).toBeVisible();
  await expect(page.getByText(`Signed in as ${world.ownerId}`)).toBeVisible();
  // The code left the address bar, and a second use is refused.
  expect(page.url()).not.toContain('csl_');
  const again = await page.context().newPage();
  await again.goto(link);
  await expect(again.getByRole('alert')).toContainText('unknown, used or expired');
  await again.close();
});

test('an approver reads the arguments, approves, and the re-sent check is allowed once', async ({ page }) => {
  const grant = await world.grant({ tools: ['issues.create_comment'], writeMode: 'approve' });
  const args = { repository: 'acme/widgets', issue_number: 7, body: 'Ship it after the release branch is cut' };
  const asked = await world.check(grant.id, 'issues.create_comment', args);
  expect(asked.decision).toBe('approval_required');

  await signIn(page);
  const card = page.getByRole('article').filter({ hasText: asked.approvalId });
  await expect(card.getByRole('heading', { name: 'issues.create_comment' })).toBeVisible();
  const tree = card.getByRole('group', { name: 'Arguments of issues.create_comment' });
  await expect(tree).toContainText('acme/widgets');
  await expect(tree).toContainText('Ship it after the release branch is cut');
  await expect(card).toContainText(grant.id);
  await accessible(page);
  await page.screenshot({ path: 'docs/console/approvals.png', fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: 'docs/console/approvals-phone.png', fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });

  await card.getByRole('textbox', { name: 'Note' }).fill('read it, fine');
  await card.getByRole('button', { name: 'Approve' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Approved issues.create_comment' })).toBeVisible();
  await expect(card).toHaveCount(0);

  const allowed = await world.check(grant.id, 'issues.create_comment', args, asked.approvalId);
  expect(allowed.decision).toBe('allow');
  const again = await world.check(grant.id, 'issues.create_comment', args, asked.approvalId);
  expect(again).toMatchObject({ decision: 'deny', reason: 'approval_used' });
});

test('a new request appears without a reload; denying it makes the re-sent check denied', async ({ page }) => {
  const grant = await world.grant({ tools: ['issues.create_comment'], writeMode: 'approve' });
  await signIn(page);
  const args = { repository: 'acme/widgets', issue_number: 8, body: 'Force-push main' };
  const asked = await world.check(grant.id, 'issues.create_comment', args);
  const card = page.getByRole('article').filter({ hasText: asked.approvalId });
  await expect(card).toBeVisible(); // arrived while the page was open
  // With the keyboard alone: type a note, tab past Approve to Deny, press Enter.
  await card.getByRole('textbox', { name: 'Note' }).focus();
  await page.keyboard.type('not on main');
  await page.keyboard.press('Tab');
  await expect(card.getByRole('button', { name: 'Approve' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(card.getByRole('button', { name: 'Deny' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('status').filter({ hasText: 'Denied' })).toBeVisible();
  const denied = await world.check(grant.id, 'issues.create_comment', args, asked.approvalId);
  expect(denied).toMatchObject({ decision: 'deny', reason: 'approval_denied' });
  const decided = await world.owner.get(`/api/approvals/${asked.approvalId}`);
  expect(decided).toMatchObject({ state: 'denied', note: 'not on main', decidedBy: world.ownerId });
});

test('hostile arguments are shown as inert text', async ({ page }) => {
  const seen = watchForScript(page);
  const grant = await world.grant({ tools: ['issues.create_comment'], writeMode: 'approve' });
  const big = 'A'.repeat(60 * 1024);
  const args = {
    repository: 'acme/widgets',
    body: '<img src=x onerror="alert(document.domain)"><script>alert(1)</script>',
    title: 'invoice\u202Egpj.exe',
    '<b>key</b>': 'isolate\u2066here\u2069',
    big,
  };
  const asked = await world.check(grant.id, 'issues.create_comment', args);
  await signIn(page);
  const card = page.getByRole('article').filter({ hasText: asked.approvalId });
  const tree = card.getByRole('group', { name: 'Arguments of issues.create_comment' });
  await expect(tree).toContainText('<img src=x onerror="alert(document.domain)"><script>alert(1)</script>');
  await expect(tree).toContainText('<b>key</b>');
  // The right-to-left override and the isolates are shown as marks, not obeyed.
  await expect(tree).toContainText('invoice⟨U+202E⟩gpj.exe');
  await expect(tree).toContainText('isolate⟨U+2066⟩here⟨U+2069⟩');
  expect(await card.locator('img, script, b').count()).toBe(0);
  // 60 KB shown in part, the rest on request.
  const more = card.getByRole('button', { name: `Show all ${big.length.toLocaleString('en')} characters` });
  await expect(more).toBeVisible();
  await more.click();
  await expect(card.getByRole('button', { name: 'Show less' })).toBeVisible();
  await page.screenshot({ path: 'docs/console/approvals-hostile.png' });
  expect(seen).toEqual([]);
  await card.getByRole('button', { name: 'Deny' }).click();
  await expect(card).toHaveCount(0);
});

test('revoking a tree says how many descendants go, and they go', async ({ page }) => {
  const root = await world.grant({ tools: ['repos.read_file'], writeMode: 'read' });
  const child = await world.agentApi.post(`/api/grants/${root.id}/attenuate`, { tools: ['repos.read_file'] });
  const grandchild = await world.agentApi.post(`/api/grants/${child.id}/attenuate`, { tools: ['repos.read_file'] });
  const used = await world.check(child.id, 'repos.read_file', { repository: 'acme/widgets', path: 'README.md' });
  expect(used.decision).toBe('allow');

  await signIn(page);
  await page.goto(`${service.baseUrl}/console/pods/${world.podId}/grants`);
  await expect(page.getByRole('heading', { name: 'Grants' })).toBeVisible();
  const rootRow = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: root.id, exact: true }) });
  await expect(rootRow).toContainText('1 used');
  await expect(page.getByRole('rowheader', { name: grandchild.id, exact: true })).toBeVisible();
  await accessible(page);
  await page.screenshot({ path: 'docs/console/grants.png', fullPage: true });

  await rootRow.getByRole('button', { name: `Revoke ${root.id}` }).click();
  const confirm = page.getByRole('alertdialog');
  await expect(confirm).toContainText(`Revoke ${root.id} and its 2 descendant grants?`);
  await confirm.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(page.getByRole('status').filter({ hasText: `Revoked ${root.id} and 2 descendant grants.` })).toBeVisible();
  for (const id of [root.id, child.id, grandchild.id]) await expect(page.getByRole('rowheader', { name: id, exact: true })).toHaveCount(0);
  await page.getByRole('combobox', { name: 'Show' }).selectOption('revoked');
  for (const id of [root.id, child.id, grandchild.id]) await expect(page.getByRole('rowheader', { name: id, exact: true })).toBeVisible();
  const denied = await world.check(grandchild.id, 'repos.read_file', { repository: 'acme/widgets', path: 'README.md' });
  expect(denied.decision).toBe('deny');
});

test("a grant's call trail shows outcome, reason and approval", async ({ page }) => {
  const grant = await world.grant({
    tools: ['repos.read_file', 'issues.create_comment'],
    writeMode: 'approve',
    budget: { calls: 1, windowMs: 60_000 },
  });
  await world.check(grant.id, 'repos.read_file', { repository: 'acme/widgets', path: 'README.md' });
  await world.check(grant.id, 'repos.read_file', { repository: 'acme/widgets', path: 'LICENSE' });
  const waiting = await world.check(grant.id, 'issues.create_comment', { repository: 'acme/widgets', body: 'hi' });
  await signIn(page);
  await page.goto(`${service.baseUrl}/console/grants/${grant.id}/calls`);
  const table = page.getByRole('table', { name: 'Call trail, newest first' });
  await expect(table.getByRole('row')).toHaveCount(4);
  await expect(table.getByRole('row').nth(1)).toContainText(`awaiting approval`);
  await expect(table.getByRole('row').nth(1)).toContainText(waiting.approvalId);
  await expect(table.getByRole('row').nth(2)).toContainText('denied');
  await expect(table.getByRole('row').nth(2)).toContainText('budget_exhausted');
  await expect(table.getByRole('row').nth(3)).toContainText('allowed');
  await accessible(page);
  await page.screenshot({ path: 'docs/console/calls.png', fullPage: true });
});

test('stopping an agent denies its next check with runtime_stopped; starting it lets it back', async ({ page }) => {
  const grant = await world.grant({ tools: ['repos.read_file'], writeMode: 'read' });
  const args = { repository: 'acme/widgets', path: 'README.md' };
  expect((await world.check(grant.id, 'repos.read_file', args)).decision).toBe('allow');
  await signIn(page);
  await page.goto(`${service.baseUrl}/console/pods/${world.podId}/agents`);
  const card = page.getByRole('article', { name: /Review bot/ });
  await expect(card.getByRole('list', { name: 'Runtime tokens of review-bot' })).toContainText('browser-suite');
  await accessible(page);
  await page.screenshot({ path: 'docs/console/agents.png', fullPage: true });
  await card.getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Stopped review-bot.' })).toBeVisible();
  await expect(card.getByRole('button', { name: 'Start' })).toBeVisible();
  expect(await world.check(grant.id, 'repos.read_file', args)).toMatchObject({ decision: 'deny', reason: 'runtime_stopped' });
  await card.getByRole('button', { name: 'Start' }).click();
  await expect(card.getByRole('button', { name: 'Stop' })).toBeVisible();
});

test('the policy page, empty states and a phone-width approvals page', async ({ page }) => {
  await signIn(page, world.memberId);
  await expect(page.getByText('Nothing waits for you.')).toBeVisible();
  await accessible(page);
  await page.getByRole('link', { name: 'Policy' }).click();
  await expect(page.getByRole('heading', { name: 'Policy' })).toBeVisible();
  await expect(page.getByText('Loaded revision')).toBeVisible();
  await expect(page.getByText('unsigned (development)')).toBeVisible();
  const packages = page.getByRole('table', { name: 'Org packages and their modes' });
  await expect(packages.getByRole('row', { name: /working_hours/ })).toContainText('off');
  await accessible(page);
  await page.screenshot({ path: 'docs/console/policy.png', fullPage: true });
  // Another tenant's pod is "not found", never an error about permissions.
  await page.goto(`${service.baseUrl}/console/pods/pod_nobody/grants`);
  await expect(page.getByRole('alert')).toContainText('Not found');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${service.baseUrl}/console/approvals`);
  await expect(page.getByRole('heading', { name: 'Pending approvals' })).toBeVisible();
  // Nothing wider than the phone's screen: no sideways scrolling of the page itself.
  expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
});
