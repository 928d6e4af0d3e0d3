import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { CHROMIUM_PATH } from '../support/system-tools.js'

/** Debian's Chromium (installed by .ci/run; suites skip without it, see test/support/system-tools.ts). */
export const CHROMIUM = CHROMIUM_PATH

/** Flags for a quiet, offline, sandbox-less headless Chromium (tests run as root in CI). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** A headless Chromium with a fresh profile; `close()` also removes the profile. */
export async function launchChromium(viewport = { width: 1400, height: 860 }): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'ledgerloop-chromium-'))
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport })
  return {
    context,
    async close() {
      await context.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/**
 * Opens `url` in a new page of `context` that records every uncaught page error and console error into
 * `problems` (a suite asserts it stays empty); `ignore` lets through console errors a test provokes on purpose.
 */
export async function openWatchedPage(context: BrowserContext, url: string, problems: string[], ignore?: (text: string) => boolean): Promise<Page> {
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' && ignore?.(message.text()) !== true) problems.push(`console error: ${message.text()}`)
  })
  await page.goto(url)
  return page
}
