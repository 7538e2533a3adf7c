/**
 * Two tiers. `unit`: pure logic, no service, milliseconds. `integration`: the service over HTTP
 * against the real Postgres and Redis; globalSetup makes a fresh database and Redis prefix per run.
 */
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
// The SDK by its package name, as grantctl, the examples and a consumer import it: its sources
// here (the name's own entry point is the compiled build, which a test run does not need).
const moduleNameMapper = { '^@grant-broker/client$': '<rootDir>/clients/typescript/src' };

module.exports = {
  testTimeout: 30000,
  maxWorkers: 2,
  // A worker keeps what the files it ran left behind: without a limit one grew past 1.5 GB of heap,
  // and the runner waited for ever on such a worker's next file. Past 1 GB it is replaced between files.
  workerIdleMemoryLimit: '1GB',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      roots: ['<rootDir>/test/unit'],
      testMatch: ['**/*.test.ts'],
      transform,
      moduleNameMapper,
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['/test/unit/'],
      transform,
      moduleNameMapper,
      globalSetup: '<rootDir>/test/support/global-setup.js',
      globalTeardown: '<rootDir>/test/support/global-teardown.js',
    },
  ],
};
