import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// The console is served by the service at /console/ (src/console/); `npm run build` writes it to
// build/console. Its API client is the repository's own typed SDK, compiled into the bundle.
export default defineConfig({
  root: here('.'),
  base: '/console/',
  publicDir: false,
  resolve: { alias: { '@grant-broker/client': here('../clients/typescript/src/index.ts') } },
  build: {
    outDir: here('../build/console'),
    emptyOutDir: true,
    // No inline script or style anywhere: the service's Content-Security-Policy forbids them.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
  },
  oxc: { jsx: { runtime: 'automatic' } },
});
