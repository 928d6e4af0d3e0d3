import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { launchChromium } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startFleet, type Fleet } from './fleet-fixture.js'
import { TOKEN } from './serve-fixture.js'

// The web page over `serve --store postgres://…`: the same page, with a worker running the sessions.
let db: ScratchDatabase
let f: Fleet
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

beforeAll(async () => {
  if (browserNeeded.skip) return
  db = await createScratchDatabase()
  f = await startFleet(db.url)
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
  await db?.drop()
})

async function openSession(): Promise<Page> {
  const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
  const page = await browser.context.newPage()
  page.setDefaultTimeout(15_000)
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  await page.goto(`${f.base}/?token=${TOKEN}#/s/${id}`)
  await page.waitForSelector('.composer textarea')
  return page
}

async function send(page: Page, text: string): Promise<void> {
  await page.fill('.composer textarea', text)
  await page.click('.composer .send')
}

describe.skipIf(browserNeeded.skip)('serve web page with a worker fleet (headless Chromium)', { timeout: 45_000 }, () => {
  it('shows the streamed text while the worker runs the turn, and cancels it with the button', async () => {
    const page = await openSession()
    await send(page, 'stream a reply')
    // The model has sent its first words and waits: the page shows them while the turn is open.
    await page.locator('.live-text', { hasText: 'first words' }).waitFor()
    await page.waitForSelector('.session[data-status="running"]')
    await page.click('.composer .cancel:not([disabled])')
    await page.locator('.row.kind-turn .status', { hasText: /^aborted$/ }).waitFor()
    await page.close()
  })

  it('names the worker that owns a running session, in its header and in the session list', async () => {
    const page = await openSession()
    const id = decodeURIComponent(page.url().split('#/s/')[1] ?? '')
    await send(page, 'stream a reply')
    await page.waitForSelector('.session[data-status="running"]')
    await page.locator('.session-head .owner', { hasText: f.workerStore.ownerId }).waitFor()
    await page.goto(`${f.base}/?token=${TOKEN}#/`)
    await page.locator(`tr[data-id="${id}"] .owner`, { hasText: f.workerStore.ownerId }).waitFor()
    expect((await f.post(`/api/sessions/${id}/cancel`)).status).toBe(202)
    await page.close()
  })

  it('shows a pending tool call of the worker, approves it, and the turn goes on', async () => {
    const page = await openSession()
    await send(page, 'deploy from the page')
    const approval = page.locator('.approval')
    await approval.waitFor()
    expect(await approval.innerText()).toContain('deploy')
    await page.waitForSelector('.session[data-status="awaiting-approval"]')
    expect(f.deployed).toEqual([])
    await approval.locator('button.approve').click()
    await page.waitForSelector('.approval', { state: 'detached' })
    await page.locator('.row.kind-turn .status', { hasText: /^completed$/ }).waitFor()
    expect(f.deployed).toEqual(['staging'])
    expect(await page.locator('.row.kind-tool .status').innerText()).toBe('ok')
    expect(f.leaseCalls).toEqual([])
    await page.close()
  })

  it('raised no page errors or console errors', () => {
    expect(problems).toEqual([])
  })
})
