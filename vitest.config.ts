import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    pool: 'forks',
    // Checks once whether bubblewrap and Chromium work; suites that need them skip (and are named at the end)
    // when they do not, except under CI=true.
    globalSetup: ['test/support/system-tools-setup.ts'],
  },
})
