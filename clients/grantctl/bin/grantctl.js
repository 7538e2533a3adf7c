#!/usr/bin/env node
// The installed command of @grant-broker/grantctl (`npx @grant-broker/grantctl` in a folder where
// the package is installed, or from the repository root, where the npm workspace links it; the
// bare name on the registry is not ours). Runs the compiled CLI of this package.
require('../dist/main.js');
