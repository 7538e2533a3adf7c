#!/usr/bin/env node
// `npx grantctl` from the repository root (an npm workspace links this bin). Runs the compiled
// CLI: `npm run build` first.
require('../../../dist/clients/grantctl/src/main.js');
