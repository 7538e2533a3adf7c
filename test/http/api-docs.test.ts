import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import openApi from '../../clients/openapi.json';
import { startService, type TestService } from '../support/service';

/**
 * GET /api/docs serves the API reference that `npm run build` renders from the OpenAPI document
 * (build/api-docs.html), self-contained: a browser reading it runs only the page's own inline
 * scripts, named by hash in its Content-Security-Policy, and loads nothing from another host.
 */
const BUILT = path.join(__dirname, '..', '..', 'build', 'api-docs.html');

let service: TestService;
let page: { status: number; type: string; policy: string; html: string };

beforeAll(async () => {
  if (!existsSync(BUILT)) throw new Error(`${BUILT} is missing: run npm run build (or npm run build:docs)`);
  service = await startService();
  const res = await service.http.get('/api/docs').buffer(true);
  page = {
    status: res.status,
    type: res.headers['content-type'] ?? '',
    policy: res.headers['content-security-policy'] ?? '',
    html: res.text,
  };
});
afterAll(() => service?.close());

/** The policy's directives by name: `script-src` → its sources. */
const directives = (policy: string) =>
  new Map(
    policy
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name = '', ...sources]) => [name, sources]),
  );

/** An address on a host other than the page's own: absolute (http, https) or protocol-relative. */
const external = (address: string) => /^\s*(https?:)?\/\//i.test(address);

describe('GET /api/docs', () => {
  it('answers 200 text/html with the API reference, titled as the OpenAPI document', () => {
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/^text\/html/);
    expect(page.html).toContain(`<title>${openApi.info.title}</title>`);
    expect(page.html).toContain('/api/broker/check');
  });

  it('has a strict Content-Security-Policy: nothing by default, the inline scripts by hash, no other host', () => {
    expect(page.policy).toBeDefined();
    const policy = directives(page.policy);
    expect(policy.get('default-src')).toEqual(["'none'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policy.get('base-uri')).toEqual(["'none'"]);
    const scriptSources = policy.get('script-src') ?? [];
    expect(scriptSources.length).toBeGreaterThan(0);
    for (const source of scriptSources) expect(source).toMatch(/^'sha256-[A-Za-z0-9+/]+=*'$/);
    for (const sources of policy.values()) {
      for (const source of sources) expect(source).not.toMatch(/^(https?:|\*|'unsafe-eval'|'strict-dynamic')/);
    }

    // Every inline script of the page is allowed by its own hash, so the page works under it.
    const inline = [...page.html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script/gi)].filter(
      ([, attributes]) => !/\bsrc\s*=/i.test(attributes ?? ''),
    );
    expect(inline.length).toBeGreaterThan(0);
    for (const [, , text = ''] of inline) {
      expect(scriptSources).toContain(`'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`);
    }
  });

  it('loads no script or stylesheet from another host', () => {
    const scriptSources = [...page.html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1] ?? '');
    const linkHrefs = [...page.html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1] ?? '');
    expect([...scriptSources, ...linkHrefs].filter(external)).toEqual([]);
  });
});
