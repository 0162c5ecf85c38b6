// Lint: the house rules a machine can check (DESIGN.md §1, STYLE.md 5).
// - workflows/ are deterministic: no Node built-ins, no effects, activities imported as types only.
// - core/ is pure: no Node built-ins, no Temporal.
// - no floating promises anywhere; no import cycles.
import js from '@eslint/js';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'node:*',
  'fs',
  'fs/*',
  'path',
  'os',
  'crypto',
  'child_process',
  'http',
  'https',
  'net',
  'url',
  'util',
  'worker_threads',
  'stream',
  'events',
];

export default tseslint.config(
  {
    ignores: [
      'lib/**',
      'node_modules/**',
      'cdk.out/**',
      '.tools/**',
      '.temporal/**',
      'coverage/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '../activities', message: 'workflows import activity types only', allowTypeImports: true },
            { name: '../../activities', message: 'workflows import activity types only', allowTypeImports: true },
          ],
          patterns: [
            { group: nodeBuiltins, message: 'workflow code runs in the deterministic sandbox: no Node built-ins' },
            {
              group: [
                '../activities/*',
                '../infra/*',
                '../workers/*',
                '../dev/*',
                '../cli/*',
                '../../activities/*',
                '../../infra/*',
                '../../workers/*',
                '../../dev/*',
                '../../cli/*',
                '@google/genai',
                '@aws-sdk/*',
              ],
              message: 'workflows orchestrate: effects belong in activities/',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    // openstarry-temporal/plugins: what a plugin module bundles into the workflow sandbox (docs/LIBRARY.md).
    files: ['plugins.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: nodeBuiltins, message: 'plugin code runs in the workflow sandbox: no Node built-ins' },
            { group: ['@temporalio/*'], message: 'the plugin entry is pure: core/ only' },
            {
              group: ['./*', '!./core'],
              message: 'the plugin entry re-exports pure code of core/ only',
              allowTypeImports: false,
            },
          ],
        },
      ],
    },
  },
  {
    files: ['core/**/*.ts'],
    ignores: ['core/**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: nodeBuiltins, message: 'core/ is pure: no Node built-ins' },
            { group: ['@temporalio/*'], message: 'core/ decides without Temporal' },
            {
              group: [
                '../activities/*',
                '../workflows/*',
                '../workers/*',
                '../dev/*',
                '../cli/*',
                '../client/*',
                '../../activities/*',
                '../../workflows/*',
              ],
              message: 'core/ depends on nothing of ours outside core/',
            },
          ],
        },
      ],
    },
  },
);
