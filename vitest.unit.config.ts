import { defineConfig } from 'vitest/config';

// The unit tests alone: what `make mutation` runs against each mutant (no root, no kernel, no binary).
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
