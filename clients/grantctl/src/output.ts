/** `--json`: exactly the API's body on stdout. Otherwise a table a person reads. */
export function print(json: boolean, body: unknown, table: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(body, null, 2)}\n` : `${table()}\n`);
}

/** The list commands' paging options: one page per call, as the API pages (limit ≤ 200). */
export const LIMIT = ['--limit <n>', 'items per page (1 to 200)', '200'] as const;
export const CURSOR = ['--cursor <cursor>', 'the nextCursor of the previous page'] as const;

export function pageQuery(options: { limit: string; cursor?: string }): { limit: number; cursor?: string } {
  return { limit: Number(options.limit), ...(options.cursor ? { cursor: options.cursor } : {}) };
}

/**
 * A page: with --json exactly the API's body (nextCursor included); as a table, with a line on
 * stderr saying how to get the next page, so a long list is never cut short without a word.
 */
export function printPage(json: boolean, page: { nextCursor: string | null }, table: () => string): void {
  print(json, page, table);
  if (!json && page.nextCursor) process.stderr.write(`more: repeat with --cursor ${page.nextCursor}\n`);
}

export function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A mistake of the caller's (bad usage, a missing variable): exit 1, nothing sent. */
export class UsageError extends Error {}

export const DEFAULT_BROKER_URL = 'http://127.0.0.1:8080';

/**
 * Where requests go: GRANT_BROKER_URL without a user and password. fetch refuses a URL that carries
 * them (the Fetch standard), and grantctl authenticates with GRANT_BROKER_TOKEN, so they are dropped
 * rather than sent or echoed in fetch's error. A value that is not a URL is bad usage, not named.
 */
export function requestBaseUrl(raw: string = process.env.GRANT_BROKER_URL ?? DEFAULT_BROKER_URL): string {
  if (!URL.canParse(raw)) throw new UsageError('GRANT_BROKER_URL is not a URL');
  const url = new URL(raw);
  url.username = '';
  url.password = '';
  return url.href;
}

/** A URL as grantctl prints it: a user and password in it shown as `***` (`http://***@host:8080/`). */
export function redactUrl(raw: string): string {
  if (!URL.canParse(raw)) return '(GRANT_BROKER_URL, not a URL)';
  const url = new URL(raw);
  if (url.username === '' && url.password === '') return url.href;
  url.username = '***';
  url.password = '';
  return url.href;
}

/**
 * The userinfo of any URL in `text` (an underlying error's message, a problem document) replaced by
 * `***`: the greedy match runs to the last `@` before the host, as the URL parser reads it.
 */
export const scrubCredentials = (text: string): string => text.replace(/\/\/[^/?#\s]*@/g, '//***@');
