import { defineConfig } from 'vitest/config';

// Slow end-to-end suites: real browsers, whole servers as child processes, crash and shutdown tests.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
