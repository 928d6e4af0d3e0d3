import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  // examples/*.test.ts import the package by name, as users do: they run against these sources, not a stale build.
  resolve: { alias: [{ find: /^ledgerloop$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) }] },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 20_000,
    pool: 'forks',
    // Checks once whether bubblewrap and Chromium work; suites that need them skip (and are named at the end)
    // when they do not, except under CI=true.
    globalSetup: ['test/support/system-tools-setup.ts'],
  },
})
