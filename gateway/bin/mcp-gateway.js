#!/usr/bin/env node
// `npx mcp-gateway --config FILE`: the gateway as the repository's build compiles it
// (tsconfig.build.json writes gateway/src to dist/gateway/src).
const compiled = require('node:path').join(__dirname, '../../dist/gateway/src/main.js');
try {
  require.resolve(compiled);
} catch {
  process.stderr.write(`mcp-gateway is not built: run \`npm run build\` at the repository root (${compiled} is missing)\n`);
  process.exit(1);
}
require(compiled);
