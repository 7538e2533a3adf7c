// ESLint (flat config) with typescript-eslint, including the type-aware rules that catch what a
// security service cannot afford: a promise nobody awaits, a promise where a value belongs.
// Formatting is Prettier's (eslint-config-prettier turns off the rules it owns).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'clients/*/dist/', 'gateway/dist/', 'build/', 'coverage/', 'node_modules/', 'tools/', '.tools/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      eqeqeq: ['error', 'always'],
      'no-console': 'off',
    },
  },
  {
    // V8 gives an object literal with an accessor a hidden class of its own in the old generation,
    // whose closure then keeps what it reaches alive through every young-generation GC: on a
    // per-request object, the whole request (see HandlerRequest in src/http/route-call.ts).
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > Property[kind=/^(get|set)$/]',
          message: 'No getters or setters in object literals: use a class (its accessors live on the prototype) or a method.',
        },
      ],
    },
  },
  {
    // The console (console/): TypeScript and TSX for the browser, checked against its own tsconfig.
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname }, globals: { ...globals.browser } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      eqeqeq: ['error', 'always'],
    },
  },
  {
    files: ['console/vite.config.mts'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // The SDK and grantctl are installed from their tarballs, without the repository: each imports
    // only its own files and the packages it declares, never the service's sources by path.
    files: ['clients/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../../*', '../*/**/src/*'], message: 'A client package may not import from outside its own folder.' }] },
      ],
    },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // jest's config and global hooks, and the bench's --require preload, are CommonJS files.
    files: ['**/*.{js,cjs}'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  prettier,
);
