import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Context } from 'koa';
import { ApiError } from '../kernel/errors';

/**
 * GET /api/docs: the API reference, rendered from the OpenAPI document by `npm run build:docs`
 * (part of `npm run build`) into build/, which is not committed. The page carries its scripts
 * inline, so a reader's browser needs nothing from another host, and the policy below lets it run
 * exactly those scripts (by hash) and load nothing from elsewhere: a page that renders text the
 * API's authors wrote should not be a way to run anyone else's code.
 */
const FILE = 'api-docs.html';

/** build/ at the repository root, from dist/src/http/ (the built service) or src/http/ (the tests). */
function builtFile(): string | undefined {
  const candidates = [path.join(__dirname, '..', '..', '..', 'build', FILE), path.join(__dirname, '..', '..', 'build', FILE)];
  return candidates.find((file) => existsSync(file));
}

/** The policy of a page whose inline scripts are these: each allowed by its SHA-256, nothing external. */
export function apiDocsPolicy(html: string): string {
  const hashes: string[] = [];
  // Script text ends at the first `</script`, as the HTML parser reads it; the parser also turns
  // CR LF into LF before a script's text is hashed.
  for (const [, attributes = '', text = ''] of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script/gi)) {
    if (/\bsrc\s*=/i.test(attributes)) continue;
    const digest = createHash('sha256').update(text.replace(/\r\n?/g, '\n'), 'utf8').digest('base64');
    hashes.push(`'sha256-${digest}'`);
  }
  // No 'unsafe-eval': the page's search probes for it (to index in a worker) and, refused, indexes
  // in the page instead.
  return [
    "default-src 'none'",
    `script-src ${[...new Set(hashes)].join(' ') || "'none'"}`,
    // Its styles are inline: <style> elements written at run time and style attributes.
    "style-src 'unsafe-inline'",
    "img-src 'self' data:",
    'font-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

let page: { html: string; policy: string } | undefined;

/** Serves the page; before `npm run build` has made it, a 404 that says how to. */
export function serveApiDocs(ctx: Context): void {
  if (!page) {
    const file = builtFile();
    if (!file) throw new ApiError('not_found', 'the API reference is not built: run npm run build');
    const html = readFileSync(file, 'utf8');
    page = { html, policy: apiDocsPolicy(html) };
  }
  ctx.set('Content-Security-Policy', page.policy);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page.html;
}
