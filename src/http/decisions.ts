import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Decisions this service made where the interface it implements is silent: prose, so it lives with
 * the other documents (docs/api-decisions.md) and is read from there. Published as the description
 * of the OpenAPI document, so clients read them where they read the API.
 */
export const API_DECISIONS_FILE = 'docs/api-decisions.md';

/** The file at the repository root, from dist/src/http/ (the built service) or src/http/ (the tests). */
function decisionsFile(): string {
  const candidates = [path.join(__dirname, '..', '..', '..', API_DECISIONS_FILE), path.join(__dirname, '..', '..', API_DECISIONS_FILE)];
  const found = candidates.find((file) => existsSync(file));
  // Without it the document would tell clients none of the rules they branch on: refuse to start.
  if (!found) throw new Error(`${API_DECISIONS_FILE} is missing: the OpenAPI document's introduction is read from it`);
  return found;
}

/** The published text: the document below its title. */
export function apiDecisions(markdown: string): string {
  return markdown.replace(/^# .*\n/, '').trim();
}

/** The decisions as the service publishes them, read once at start. */
export function readApiDecisions(): string {
  return apiDecisions(readFileSync(decisionsFile(), 'utf8'));
}
