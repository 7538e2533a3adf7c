// Writes clients/openapi.json: the OpenAPI document the service serves at /api/openapi.json, built
// from the compiled route declarations (dist/) and introduced by docs/api-decisions.md (the
// decisions taken where the interface is silent), for client generation and for the lint in CI.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const { openApiDocument } = require(path.join(root, 'dist/src/openapi-document.js'));
const { API_DECISIONS_FILE, apiDecisions } = require(path.join(root, 'dist/src/http/decisions.js'));
const document = openApiDocument(apiDecisions(readFileSync(path.join(root, API_DECISIONS_FILE), 'utf8')));
const out = path.join(root, 'clients/openapi.json');
writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
console.log(`${path.relative(root, out)}: ${Object.keys(document.paths).length} paths`);
