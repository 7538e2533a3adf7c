import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

/** Signs in with a one-time link and opens `path` (the overview is where a sign-in lands). */
async function signIn(page: Page, userId = world.ownerId, path = '/approvals') {
  await page.goto(await service.linkFor(userId));
  await expect(page.getByRole('heading', { name: /^Overview/ })).toBeVisible();
  if (path !== '/') await page.goto(`${service.baseUrl}/console${path}`);
}

/** An approval's card, found by its id (shown shortened, copied whole). */
function cardOf(page: Page, approvalId: string) {
  return page.getByRole('article').filter({ has: page.getByRole('button', { name: `Copy id ${approvalId}`, exact: true }) });
}

/** No sideways scrolling of the page itself. */
async function fitsTheWidth(page: Page) {
  expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
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
  await expect(page.getByRole('heading', { name: 'Overview of Browser pod' })).toBeVisible();
  await expect(page.getByText(`Signed in as ${world.ownerId}`)).toBeVisible();
  // The code left the address bar, and a second use is refused.
  expect(page.url()).not.toContain('csl_');
  const again = await page.context().newPage();
  await again.goto(link);
  await expect(again.getByRole('alert')).toContainText('unknown, used or expired');
  await again.close();
  // In the tab it signed in, the spent link says the tab is signed in, not that something failed.
  await page.goto(link);
  await expect(page.getByRole('heading', { name: 'Already signed in' })).toBeVisible();
  await expect(page.getByRole('status')).toContainText(`still signed in as ${world.ownerId}`);
  await expect(page.getByRole('alert')).toHaveCount(0);
});

test('an approver reads the arguments, approves, and the re-sent check is allowed once', async ({ page }) => {
  const grant = await world.grant({ tools: ['issues.create_comment'], writeMode: 'approve' });
  const args = { repository: 'acme/widgets', issue_number: 7, body: 'Ship it after the release branch is cut' };
  const asked = await world.check(grant.id, 'issues.create_comment', args);
  expect(asked.decision).toBe('approval_required');

  await signIn(page);
  const card = cardOf(page, asked.approvalId);
  await expect(card.getByRole('heading', { name: 'issues.create_comment' })).toBeVisible();
  const tree = card.getByRole('group', { name: 'Arguments of issues.create_comment' });
  await expect(tree).toContainText('acme/widgets');
  await expect(tree).toContainText('Ship it after the release branch is cut');
  // The grant by its tools and target, the agent by its name; their ids one click away.
  await expect(card).toContainText('issues.create_comment · pod Browser pod');
  await expect(card).toContainText('agent Review bot');
  await expect(card.getByRole('button', { name: `Copy id ${grant.id}` })).toBeVisible();
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
  const card = cardOf(page, asked.approvalId);
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
  const card = cardOf(page, asked.approvalId);
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
  const rowOf = (id: string) => page.getByRole('row').filter({ has: page.getByRole('button', { name: `Copy id ${id}`, exact: true }) });
  const rootRow = rowOf(root.id);
  await expect(rootRow).toContainText('1 used');
  await expect(rootRow.getByRole('rowheader')).toContainText('repos.read_file · pod Browser pod');
  await expect(rowOf(grandchild.id)).toBeVisible();
  await accessible(page);
  await page.screenshot({ path: 'docs/console/grants.png', fullPage: true });

  await rootRow.getByRole('button', { name: `Revoke repos.read_file · pod Browser pod (${root.id})` }).click();
  const confirm = page.getByRole('alertdialog');
  await expect(confirm).toContainText(`Revoke repos.read_file · pod Browser pod (${root.id}) and its 2 descendant grants?`);
  // Not clipped by the table: the whole confirmation is on the screen.
  const box = (await confirm.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.y).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(1280);
  expect(box.y + box.height).toBeLessThanOrEqual(800);
  await expect(confirm.getByRole('button', { name: 'Confirm revoke' })).toBeInViewport({ ratio: 1 });
  await page.screenshot({ path: 'docs/console/grants-revoke.png' });
  await confirm.getByRole('button', { name: 'Confirm revoke' }).click();
  await expect(
    page.getByRole('status').filter({ hasText: `Revoked repos.read_file · pod Browser pod (${root.id}) and 2 descendant grants.` }),
  ).toBeVisible();
  for (const id of [root.id, child.id, grandchild.id]) await expect(rowOf(id)).toHaveCount(0);
  await page.getByRole('combobox', { name: 'Show' }).selectOption('revoked');
  for (const id of [root.id, child.id, grandchild.id]) await expect(rowOf(id)).toBeVisible();
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
  // The page reads the latest checkpoint once; wait until one is signed over the newest leaf.
  const newestLeaf = (waiting.receipt as { leafIndex: number }).leafIndex;
  let covering = 0;
  await expect
    .poll(async () => {
      const note = await (await fetch(`${service.baseUrl}/api/trail/checkpoint`)).text();
      covering = Number(note.split('\n')[1]);
      return covering > newestLeaf;
    })
    .toBe(true);
  await signIn(page);
  await page.goto(`${service.baseUrl}/console/grants/${grant.id}/calls`);
  const table = page.getByRole('table', { name: 'Call trail, newest first' });
  await expect(table.getByRole('row')).toHaveCount(4);
  for (const row of [1, 2, 3]) await expect(table.getByRole('row').nth(row)).toContainText(/in checkpoint \d+/);
  await table.getByRole('row').nth(1).getByRole('button', { name: 'Details' }).click();
  await expect(page.getByText(new RegExp(`^leaf ${newestLeaf}, in checkpoint (\\d+)$`))).toBeVisible();
  const shown = Number((await page.getByText(/^leaf \d+, in checkpoint \d+$/).textContent())!.split(' ').pop());
  expect(shown).toBeGreaterThanOrEqual(covering);
  await table.getByRole('row').nth(1).getByRole('button', { name: 'Details' }).click();
  await expect(table.getByRole('row').nth(1)).toContainText(`awaiting approval`);
  await expect(
    table
      .getByRole('row')
      .nth(1)
      .getByRole('button', { name: `Copy id ${waiting.approvalId}` }),
  ).toBeVisible();
  await expect(table.getByRole('row').nth(1)).toContainText('agent Review bot');
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
  await fitsTheWidth(page);
});

test('the overview: checks per hour as a chart with its numbers, denials by reason, trees nearest their budget', async ({ page }) => {
  const seen = watchForScript(page);
  const busy = await world.grant({ tools: ['repos.read_file'], writeMode: 'read', budget: { calls: 3, windowMs: 3_600_000 } });
  for (const path of ['README.md', 'LICENSE']) await world.check(busy.id, 'repos.read_file', { repository: 'acme/widgets', path });
  const refused = await world.check(busy.id, 'issues.create_comment', { repository: 'acme/widgets', body: 'hi' });
  expect(refused).toMatchObject({ decision: 'deny', reason: 'tool_not_allowed' });
  await service.flushTallies();

  await signIn(page, world.ownerId, '/');
  await expect(page.getByRole('heading', { name: 'Overview of Browser pod' })).toBeVisible();
  // The chart is an image named by its totals; the same numbers hour by hour are a table.
  const chart = page.getByRole('img', { name: /^Checks per hour: \d+ allowed, [1-9]\d* denied, \d+ awaiting approval, over 24 hours$/ });
  await expect(chart).toBeVisible();
  await expect(chart.locator('canvas')).toHaveCount(1);
  await page.getByText('The numbers, hour by hour').click();
  const hours = page.getByRole('table', { name: 'Checks per hour, hour by hour' });
  await expect(hours.getByRole('row')).toHaveCount(25);
  await expect(page.getByRole('list', { name: 'Denials by reason' })).toContainText('tool_not_allowed');
  const nearest = page.getByRole('list', { name: 'Grant trees nearest their budget' });
  // Earlier tests' trees are there too (one has spent its whole budget): this one by its id.
  const tree = nearest.getByRole('listitem').filter({ has: page.getByRole('button', { name: `Copy id ${busy.id}`, exact: true }) });
  await expect(tree).toContainText('repos.read_file · pod Browser pod');
  await expect(tree).toContainText('2 of 3 used, 1 left');
  await expect(page.getByText('Policy revision')).toBeVisible();
  await accessible(page);
  await page.screenshot({ path: 'docs/console/overview.png', fullPage: true });
  await page.getByRole('button', { name: 'Last 7 days' }).click();
  await expect(page.getByRole('img', { name: /over 168 hours$/ })).toBeVisible();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('button', { name: 'Last 24 hours' }).click();
  await expect(page.getByRole('img', { name: /over 24 hours$/ })).toBeVisible();
  await fitsTheWidth(page);
  await accessible(page);
  await page.screenshot({ path: 'docs/console/overview-phone.png', fullPage: true });
  // uPlot draws on a canvas and styles through the DOM: nothing the policy refuses (a refusal is a console error).
  expect(seen).toEqual([]);
});

test("the pod switcher lists the viewer's pods by name and opens the same page for another", async ({ page }) => {
  const second = await world.owner.post('/api/pods', { name: 'Second pod' });
  await signIn(page, world.ownerId, `/pods/${world.podId}/grants`);
  const pod = page.getByRole('combobox', { name: 'Pod' });
  await expect(pod.getByRole('option', { name: 'Browser pod (owner)' })).toHaveCount(1);
  await expect(pod.getByRole('option', { name: 'Second pod (owner)' })).toHaveCount(1);
  await pod.selectOption({ label: 'Second pod (owner)' });
  await expect(page).toHaveURL(`${service.baseUrl}/console/pods/${second.id}/grants`);
  await expect(page.getByText('No active grant in this pod.')).toBeVisible();
  await page.getByRole('link', { name: 'Overview' }).click();
  await expect(page.getByRole('heading', { name: 'Overview of Second pod' })).toBeVisible();
  await expect(page.getByRole('button', { name: `Copy id ${second.id}` })).toBeVisible();
  await pod.selectOption({ label: 'Browser pod (owner)' });
  await expect(page.getByRole('heading', { name: 'Overview of Browser pod' })).toBeVisible();
});

test('every page fits a phone, its tables as cards, with times written out where nothing hovers', async ({ browser }) => {
  const grant = await world.grant({ tools: ['repos.read_file'], writeMode: 'read' });
  await world.check(grant.id, 'repos.read_file', { repository: 'acme/widgets', path: 'README.md' });
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  const page = await phone.newPage();
  await signIn(page, world.ownerId, '/');
  const pages: Array<[string, string, RegExp]> = [
    ['overview', '/', /^Overview/],
    ['approvals', '/approvals', /^Pending approvals$/],
    ['grants', `/pods/${world.podId}/grants`, /^Grants$/],
    ['calls', `/grants/${grant.id}/calls`, /^Calls$/],
    ['agents', `/pods/${world.podId}/agents`, /^Agents$/],
    ['policy', '/policy', /^Policy$/],
  ];
  for (const [name, path, heading] of pages) {
    await page.goto(`${service.baseUrl}/console${path}`);
    await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
    // Loaded (the approvals page long-polls, so the network is never idle).
    await expect(page.getByRole('status').filter({ hasText: /^Loading / })).toHaveCount(0);
    await fitsTheWidth(page);
    await test.step(`${name} at phone width`, () => accessible(page));
    if (name === 'grants' || name === 'calls') await page.screenshot({ path: `docs/console/${name}-phone.png`, fullPage: true });
  }
  // On the calls page (the last table visited above the policy page): a row is a card, its cells labelled.
  await page.goto(`${service.baseUrl}/console/grants/${grant.id}/calls`);
  const row = page.getByRole('table', { name: 'Call trail, newest first' }).getByRole('row').nth(1);
  await expect(row).toBeVisible();
  expect(await row.evaluate('getComputedStyle(document.querySelector("table.cards-on-phone tbody tr")).display')).toBe('block');
  // No hover here: the exact time is written out beside "… ago".
  expect(await page.evaluate("matchMedia('(hover: none)').matches")).toBe(true);
  await expect(row.locator('.absolute-time')).toContainText('UTC');
  expect(await row.locator('.absolute-time').evaluate((element) => element.getBoundingClientRect().width)).toBeGreaterThan(40);
  await phone.close();
  // With a pointer that hovers, the exact time is the tooltip (and still read out to a screen reader).
  const desk = await browser.newPage();
  await signIn(desk, world.ownerId, `/grants/${grant.id}/calls`);
  const time = desk.getByRole('table', { name: 'Call trail, newest first' }).locator('time').first();
  await expect(time).toHaveAttribute('title', /UTC$/);
  expect(await time.locator('.absolute-time').evaluate((element) => element.getBoundingClientRect().width)).toBeLessThanOrEqual(1);
  await desk.close();
});

test('the policy playground tries a recent check against the serving policy and a candidate bundle, side by side', async ({ page }) => {
  const grant = await world.grant({ tools: ['repos.read_file'], writeMode: 'read' });
  expect((await world.check(grant.id, 'repos.read_file', { repository: 'evil/widgets', path: 'README.md' })).decision).toBe('allow');
  const dir = mkdtempSync(path.join(tmpdir(), 'playground-'));
  const bundle = path.join(dir, 'candidate.tar.gz');
  execFileSync(process.execPath, ['scripts/build-policy.mjs'], {
    env: {
      ...process.env,
      ORG_POLICY_MODES: 'broker.check.repository_allowlist=enforce',
      POLICY_REVISION: 'candidate-allowlist',
      POLICY_BUILD_OUT: path.join(dir, 'candidate.wasm'),
      POLICY_BUNDLE_OUT: bundle,
    },
    stdio: 'ignore',
  });

  await signIn(page, world.ownerId, '/policy');
  await page.getByRole('link', { name: 'Try a check in the playground' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Policy playground' })).toBeVisible();
  const recent = page.getByRole('list', { name: 'Recent checks' });
  await recent.getByRole('button', { name: 'Try repos.read_file' }).first().click();
  const box = page.getByRole('textbox', { name: 'Check input (JSON)' });
  await expect(box).toContainText('"repos.read_file"');
  // This world's connection names no resource pointer: edit the input as one would paste it.
  const tried = JSON.parse(await box.inputValue()) as Record<string, unknown>;
  expect(tried.args).toBe('**REDACTED**');
  await box.fill(JSON.stringify({ ...tried, resource: { repository: 'evil/widgets' } }, null, 2));
  await page.getByLabel('Candidate bundle (.tar.gz, optional)').setInputFiles(bundle);
  await page.getByRole('button', { name: 'Evaluate' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'The two policies differ.' })).toBeVisible();
  const serving = page.getByRole('region', { name: 'Serving policy' });
  const candidate = page.getByRole('region', { name: 'Candidate bundle' });
  await expect(serving).toContainText('allow');
  await expect(candidate).toContainText('repository_not_allowlisted');
  await expect(candidate).toContainText('candidate-allowlist');
  await expect(candidate).toContainText('org.broker.check.repository_allowlist');
  await accessible(page);
  await page.screenshot({ path: 'docs/console/playground.png', fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await fitsTheWidth(page);
  await accessible(page);
  await page.screenshot({ path: 'docs/console/playground-phone.png', fullPage: true });
  rmSync(dir, { recursive: true, force: true });

  // A member who runs no pod is not a security admin: the page says "not found", as the API does.
  await signIn(page, world.memberId, '/policy/playground');
  await expect(page.getByRole('alert')).toContainText('Not found, or not yours to see.');
});

test('the call trail searched: a denied call found by outcome, tool and reason, and its detail', async ({ page }) => {
  const grant = await world.grant({ tools: ['repos.read_file', 'issues.create_comment'], writeMode: 'approve' });
  await world.check(grant.id, 'repos.read_file', { repository: 'acme/widgets', path: 'README.md' });
  const asked = await world.check(grant.id, 'issues.create_comment', { repository: 'acme/widgets', body: 'hi' });
  await world.owner.post(`/api/approvals/${asked.approvalId}/deny`, { note: 'not today' });
  const refused = await world.check(grant.id, 'issues.create_comment', { repository: 'acme/widgets', body: 'hi' }, asked.approvalId);
  expect(refused).toMatchObject({ decision: 'deny', reason: 'approval_denied' });
  await world.check(grant.id, 'repos.read_file', { repository: 'acme/widgets', path: 'LICENSE' });

  await signIn(page, world.ownerId, `/grants/${grant.id}/calls`);
  const table = page.getByRole('table', { name: 'Call trail, newest first' });
  await expect(table.getByRole('row')).toHaveCount(5);
  const search = page.getByRole('search', { name: 'Search the calls' });
  await search.getByLabel('Outcome').selectOption('denied');
  await search.getByLabel('Tool', { exact: true }).fill('issues.create_comment');
  await search.getByLabel('Reason').fill('approval_denied');
  for (const label of ['From', 'To', 'Principal', 'Credential']) await expect(search.getByLabel(label, { exact: true })).toBeVisible();
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(table.getByRole('row')).toHaveCount(2);
  await expect(table.getByRole('row').nth(1)).toContainText('approval_denied');
  await table.getByRole('button', { name: 'Details' }).click();
  await expect(table.getByRole('definition').filter({ hasText: 'approval_denied' })).toBeVisible();
  await expect(table.getByRole('definition').filter({ hasText: 'never stored' })).toContainText('sha256:');
  // The call that asked for the approval: its detail says who decided it, and their note.
  await search.getByLabel('Outcome').selectOption('awaiting_approval');
  await search.getByLabel('Reason').fill('');
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(table.getByRole('row')).toHaveCount(2);
  await table.getByRole('button', { name: 'Details' }).click();
  const decided = table.getByRole('definition').filter({ hasText: 'denied by' });
  await expect(decided).toContainText(`denied by ${world.ownerId}`);
  await expect(decided).toContainText('“not today”');
  await accessible(page);
  await page.screenshot({ path: 'docs/console/calls-search.png', fullPage: true });
  // A search nothing matches says so; "Clear" brings every call back.
  await search.getByLabel('Tool', { exact: true }).fill('no.such_tool');
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page.getByText('No call of this grant matches the search.')).toBeVisible();
  await search.getByRole('button', { name: 'Clear' }).click();
  await expect(table.getByRole('row')).toHaveCount(5);
  await page.setViewportSize({ width: 390, height: 844 });
  await fitsTheWidth(page);
});
