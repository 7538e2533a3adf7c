// `require('@grant-broker/client')` from plain JavaScript: the SDK as the repository's build
// compiles it (tsconfig.build.json writes clients/typescript/src to dist/clients/typescript/src).
// A package's `exports` may not point outside its own folder, hence this file. TypeScript reads
// the types from src/index.ts (`types` in package.json).
const compiled = require('node:path').join(__dirname, '../../dist/clients/typescript/src/index.js');
try {
  module.exports = require(compiled);
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND' && String(error.message).includes(compiled)) {
    throw new Error(`@grant-broker/client is not built: run \`npm run build\` at the repository root (${compiled} is missing)`);
  }
  throw error;
}
