import { defineConfig } from '@playwright/test';

/**
 * The console in a real browser: Debian's Chromium (scripts/test-browser.sh installs it with apt
 * when it is missing; Playwright never downloads one), one worker, against the service started by
 * each spec on a spare port (test/browser/world.ts), in a database of this run
 * (test/browser/global-setup.ts).
 */
export default defineConfig({
  testDir: 'test/browser',
  testMatch: '**/*.spec.ts',
  globalSetup: './test/browser/global-setup.ts',
  globalTeardown: './test/support/global-teardown.js',
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: 'build/playwright',
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
    viewport: { width: 1280, height: 800 },
    trace: 'off',
    screenshot: 'off',
  },
});
