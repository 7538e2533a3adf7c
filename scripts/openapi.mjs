// Writes clients/openapi.json: the OpenAPI document the service serves at /api/openapi.json, built
// from the compiled route declarations (dist/), for client generation and for the lint in CI.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const { openApiDocument } = require(path.join(root, 'dist/src/openapi-document.js'));
const out = path.join(root, 'clients/openapi.json');
writeFileSync(out, `${JSON.stringify(openApiDocument(), null, 2)}\n`);
console.log(`${path.relative(root, out)}: ${Object.keys(openApiDocument().paths).length} paths`);
