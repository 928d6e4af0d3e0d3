import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { writeQuarantinedSession } from './stored-session.js'

// Durable execution on the page, in Chromium: a quarantined session is badged in the list and in its header
// with the reason; "Resume anyway" resumes it here, and the continuation turn that carries on the interrupted
// work is marked in the waterfall and in the conversation.
let f: ServeFixture
let browser: { context: BrowserContext; close: () => Promise<void> }
let quarantined: string
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startServe()
  quarantined = await writeQuarantinedSession(f.dir)
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
})

async function openPage(hash: string): Promise<Page> {
  return openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}${hash}`, problems)
}

describe.skipIf(browserNeeded.skip)('durable execution on the page (headless Chromium)', { timeout: 30_000 }, () => {
  it('badges a quarantined session with its reason; Resume anyway continues it, and the continuation turn is marked', async () => {
    const page = await openPage('#/')
    const row = page.locator(`tr[data-id="${quarantined}"]`)
    const badge = row.locator('.badge.quarantined')
    await badge.waitFor()
    expect(await badge.getAttribute('title')).toMatch(/interrupted 1 times? in a row/)

    await row.click()
    const notice = page.locator('.quarantine')
    await notice.waitFor()
    expect(await notice.innerText()).toMatch(/Quarantined: the same work was interrupted/)
    expect(await page.locator('.session-head .badge.quarantined').count()).toBe(1)
    await page.click('.quarantine .resume-anyway')

    // Resumed here: the quarantine goes, turn 2 continues turn 1 and completes.
    await notice.waitFor({ state: 'detached' })
    const mark = page.locator('.row.kind-turn .continues-mark')
    await mark.waitFor()
    expect(await mark.innerText()).toBe('↻ 1')
    expect(await mark.getAttribute('title')).toBe('continues turn 1 after a crash')
    await page.getByRole('tab', { name: 'Conversation' }).click()
    await page.locator('.chat-turn .continues', { hasText: 'continues turn 1 after a crash' }).waitFor()

    await page.goto(`${f.base}/?token=${TOKEN}#/`)
    await page.locator(`tr[data-id="${quarantined}"]`).waitFor()
    expect(await page.locator(`tr[data-id="${quarantined}"] .badge.quarantined`).count()).toBe(0)
    expect(problems).toEqual([])
    await page.close()
  })
})
