#!/usr/bin/env node
// The installed command (`npx grantctl` in a folder where the package is installed, or from the
// repository root, where the npm workspace links it). Runs the compiled CLI of this package.
require('../dist/main.js');
