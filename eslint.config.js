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
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > Property[kind=/^(get|set)$/]',
          message: 'V8 keeps an object literal\'s accessors in the old generation, holding their closures past young collections: use a class, a data property or a method (see HandlerRequest in server/http/operations.ts).',
        },
      ],
    },
  },
  {
    // Scripts, tests and benchmarks parse their own options and test settings.
    files: ['server/config.ts', 'client/examples/**', 'scripts/**', 'bench/**', 'conformance/**', '**/*.test.ts', 'server/testing/**', 'test/**', '*.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Tests build what they need once; the accessor rule is for code that runs per request.
    files: ['**/*.test.ts', 'test/**', 'bench/**', 'conformance/**'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
