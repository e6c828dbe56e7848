// Lints hand-written TypeScript; generated code is type-checked, not linted.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'generated/', 'docs/redoc/', 'docs/swagger-ui/', 'data/', 'bench/results/', 'playground/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read the environment in server/config.ts only.' },
        { object: 'url', property: 'parse', message: 'Use the WHATWG URL API (new URL); see server/http/url-parse-warning.ts.' },
      ],
      'no-restricted-imports': [
        'error',
        {
          paths: ['node:url', 'url'].map((name) => ({ name, importNames: ['parse'], message: 'Use the WHATWG URL API (new URL); see server/http/url-parse-warning.ts.' })),
        },
      ],
    },
  },
  {
    // Scripts, tests and benchmarks parse their own options and test settings.
    files: ['server/config.ts', 'client/examples/**', 'scripts/**', 'bench/**', 'conformance/**', '**/*.test.ts', 'server/testing/**', 'test/**', '*.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
