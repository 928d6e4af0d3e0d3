import { rmSync } from 'node:fs'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/index.js'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

// A session's cost cap on the page, in Chromium: a session created with its own cap (POST /api/sessions
// maxCostUsd) shows its spend against the cap as it runs, is stopped by it, and still shows both once stored and
// served by a server that never heard of the cap (it is read from the log). A model without a price is a warning.
let f: ServeFixture
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startServe()
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
})

async function openSession(fixture: ServeFixture, id: string): Promise<Page> {
  return openWatchedPage(browser.context, `${fixture.base}/?token=${TOKEN}#/s/${id}`, problems)
}

async function turnEnded(fixture: ServeFixture, id: string, turns: number): Promise<void> {
  await fixture.until(async () => {
    const s = (await (await fixture.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }
    return s.turns >= turns && s.status === 'idle'
  })
}

describe.skipIf(browserNeeded.skip)('spend against the cost cap on the page (headless Chromium)', { timeout: 40_000 }, () => {
  it('shows a live session its spend against its own cap, the stop, and the same for the stored session on another server', async () => {
    const first = await startServe()
    const id = ((await (await first.post('/api/sessions', { maxCostUsd: 0.02 })).json()) as { id: string }).id
    const page = await openSession(first, id)
    const cap = page.locator('.session-head .cost-cap')
    await cap.waitFor()
    expect(await cap.innerText()).toBe('spent $0.000000 of $0.0200 cap')
    // Each "hello back" bills $0.014 at the fixture's prices: the page follows the live session.
    await first.post(`/api/sessions/${id}/followup`, { text: 'hello' })
    await page.locator('.cost-cap', { hasText: 'spent $0.0140 of $0.0200 cap' }).waitFor()
    expect(await cap.getAttribute('class')).toBe('cost-cap')
    await first.post(`/api/sessions/${id}/followup`, { text: 'hello again' })
    await page.locator('.cost-cap', { hasText: 'spent $0.0280 of $0.0200 cap' }).waitFor()
    await turnEnded(first, id, 2)
    // Over the cap: the third turn is stopped before its request.
    await first.post(`/api/sessions/${id}/followup`, { text: 'and again' })
    await turnEnded(first, id, 3)
    await page.locator('.cost-cap.reached[title$="stopped turn 3"]').waitFor()
    expect(await cap.getAttribute('title')).toMatch(/^this session's own cap, billed over every request attempt/)
    await page.close()

    // Stored, under a server without any cap of its own: the cap comes from the log, and still holds.
    const dir = first.dir
    await first.server.close()
    const again = await startServe({ store: new JsonlStore({ dir }) })
    try {
      const stored = await openSession(again, id)
      const shown = stored.locator('.session-head .cost-cap.reached')
      await shown.waitFor()
      expect(await shown.innerText()).toBe('spent $0.0280 of $0.0200 cap')
      expect(await stored.locator('.session-head .badge').first().innerText()).toBe('stored')
      await again.post(`/api/sessions/${id}/followup`, { text: 'one more' })
      await turnEnded(again, id, 4)
      const reasons = (await (await again.api(`/api/sessions/${id}`)).json()) as { lastReason: string; costCap: { stoppedTurns: number[] } }
      expect(reasons.costCap.stoppedTurns).toEqual([3, 4])
      await stored.close()
    } finally {
      await again.close()
      rmSync(dir, { recursive: true, force: true })
    }
    expect(problems).toEqual([])
  })

  it('warns on the page that a model without a price is not counted against the cap', async () => {
    const id = ((await (await f.post('/api/sessions', { model: 'unpriced-model', maxCostUsd: 1 })).json()) as { id: string }).id
    await f.post(`/api/sessions/${id}/followup`, { text: 'hello' })
    await turnEnded(f, id, 1)
    const page = await openSession(f, id)
    const cap = page.locator('.session-head .cost-cap')
    await cap.waitFor()
    expect(await cap.locator('.cost-cap-warning').innerText()).toBe('⚠ no price for scripted/unpriced-model: not counted against the cap')
    expect(await cap.innerText()).toMatch(/^spent \$0\.000000 of \$1\.00 cap \(1 unpriced\)/)
    await page.close()
    expect(problems).toEqual([])
  })
})
