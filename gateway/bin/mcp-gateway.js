#!/usr/bin/env node
// The installed command of @grant-broker/mcp-gateway: hosts run `npx -y @grant-broker/mcp-gateway
// --config FILE` (the bare name on the registry is someone else's). Runs the compiled gateway of
// this package.
const compiled = require('node:path').join(__dirname, '../dist/main.js');
try {
  require.resolve(compiled);
} catch {
  process.stderr.write(`mcp-gateway is not built: run \`npm run build\` at the repository root (${compiled} is missing)\n`);
  process.exit(1);
}
require(compiled);
