import { defineConfig } from 'vitest/config';

// Unit and integration tests, colocated as *.test.ts beside the code they test.
export default defineConfig({
  test: {
    include: ['server/**/*.test.ts', 'client/**/*.test.ts', 'playground/**/*.test.ts', 'scripts/**/*.test.ts', 'generated/**/*.test.ts', 'deploy/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    typecheck: {
      enabled: true,
      include: ['**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
    },
  },
});
