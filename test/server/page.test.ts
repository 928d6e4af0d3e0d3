import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

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

async function openPage(hash = ''): Promise<Page> {
  return openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}${hash}`, problems)
}

// Waits for the (first) turn row to show a status. The page's CSP forbids eval, so no waitForFunction.
async function turnStatus(page: Page, status: string): Promise<void> {
  await page.locator('.row.kind-turn .status', { hasText: new RegExp(`^${status}$`) }).waitFor()
}

async function newSession(): Promise<string> {
  return ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
}

async function ranSession(text: string): Promise<string> {
  const id = await newSession()
  await f.post(`/api/sessions/${id}/followup`, { text })
  await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns >= 1)
  return id
}

describe.skipIf(browserNeeded.skip)('serve web page (headless Chromium)', { timeout: 30_000 }, () => {
  it('lists sessions with status, last reason, turns and tokens, and drops the token from the address bar', async () => {
    const id = await ranSession('echo listed session')
    const page = await openPage()
    const row = page.locator(`tr[data-id="${id}"]`)
    await row.waitFor()
    const cells = await row.locator('td').allInnerTexts()
    expect(cells[0]).toContain('echo listed session')
    expect(cells[1]).toBe('idle')
    expect(cells[2]).toBe('completed')
    expect(cells[3]).toBe('1')
    expect(cells[4]).toBe('68') // 18 + 30 uncached input tokens + 20 cache reads
    expect(cells[5]).toBe('20') // cache hits
    expect(page.url()).not.toContain('token')
    // Keyboard: the table takes focus, Enter opens the focused row.
    await page.locator('table.sessions').focus()
    await page.keyboard.press('Enter')
    await page.waitForSelector('.session')
    expect(page.url()).toMatch(/#\/s\//)
    await page.close()
  })

  it('opens a scripted session as a waterfall, expands a step to read its request, and shows the diff with the stable prefix', async () => {
    const id = await ranSession('echo timeline please')
    const page = await openPage(`#/s/${id}`)
    await page.waitForSelector('.row.kind-tool')
    const kinds = await page.locator('.row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind')))
    expect(kinds).toEqual(['turn', 'step', 'request', 'tool', 'step', 'request'])
    expect(await page.locator('.row.kind-turn .status').innerText()).toBe('completed')
    // The second step: its request carries the tool call and its result.
    await page.locator('.row.kind-step').nth(1).click()
    await page.waitForSelector('.request-panel[data-request="2"]')
    const messages = page.locator('.request-panel .message')
    expect(await messages.count()).toBe(3)
    expect(await messages.nth(0).innerText()).toContain('echo timeline please')
    expect(await messages.nth(0).locator('.cache-tag').innerText()).toBe('stable prefix')
    expect(await messages.nth(2).innerText()).toContain('echo: timeline please')
    await page.getByRole('tab', { name: 'Diff' }).click()
    const diff = await page.locator('.diff').innerText()
    expect(diff).toContain('request 1 → 2')
    expect(diff).toContain('1 kept · 0 dropped · 2 added')
    expect(await page.locator('.stable-prefix').innerText()).toBe('tools same · system same · 1 message')
    await page.getByRole('tab', { name: 'Headers' }).click()
    expect(await page.locator('.headers').innerText()).toContain('deploy')
    // Keyboard: move up to the tool row and open it.
    await page.locator('.rows').focus()
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('Enter')
    await page.waitForSelector('.tool-panel')
    // The panel fetches the result after it opens: wait for it rather than read the first paint.
    await page.locator('.tool-panel').getByText('echo: timeline please').first().waitFor()
    expect(await page.locator('.tool-panel').innerText()).toContain('echo: timeline please')
    await page.close()
  })

  it('streams a running session: the reply appears piece by piece as it arrives', async () => {
    const id = await newSession()
    const page = await openPage(`#/s/${id}`)
    await page.waitForSelector('.composer textarea')
    // Record every state of the live reply as the DOM changes.
    // (Browser-side code is passed as text: the test's TypeScript has no DOM types.)
    await page.evaluate(`(() => {
      const seen = []
      window.liveTexts = seen
      new MutationObserver(() => {
        const text = document.querySelector('.live-text')?.textContent ?? ''
        if (text !== '' && seen[seen.length - 1] !== text) seen.push(text)
      }).observe(document.body, { subtree: true, childList: true, characterData: true })
    })()`)
    await page.fill('.composer textarea', 'slow stream')
    await page.click('.composer .send')
    await page.locator('.live-text', { hasText: 'part9' }).waitFor()
    await turnStatus(page, 'completed')
    const texts = (await page.evaluate('window.liveTexts')) as string[]
    expect(texts.length).toBeGreaterThanOrEqual(5)
    expect(texts[0]?.startsWith('part0')).toBe(true)
    for (let i = 1; i < texts.length; i++) expect(texts[i]?.startsWith(texts[i - 1] as string)).toBe(true)
    expect(texts[texts.length - 1]).toBe(Array.from({ length: 10 }, (_, i) => `part${i} `).join(''))
    await page.close()
  })

  it('shows a pending tool call, approves it, and the turn goes on', async () => {
    const id = await newSession()
    const page = await openPage(`#/s/${id}`)
    await page.waitForSelector('.composer textarea')
    await page.fill('.composer textarea', 'deploy from the page')
    await page.click('.composer .send')
    const approval = page.locator('.approval')
    await approval.waitFor()
    expect(await approval.innerText()).toContain('deploy')
    await page.waitForSelector('.session[data-status="awaiting-approval"]')
    // The waterfall says the call waits for a person, not merely that it is open.
    await page.locator('.row.kind-tool .status', { hasText: /^waiting$/ }).waitFor()
    await approval.locator('button.approve').click()
    await page.waitForSelector('.approval', { state: 'detached' })
    await turnStatus(page, 'completed')
    expect(f.deployed).toContain('staging')
    expect(await page.locator('.row.kind-tool .status').innerText()).toBe('ok')
    await page.close()
  })

  it('cancels a running turn with the cancel button', async () => {
    const id = await newSession()
    const page = await openPage(`#/s/${id}`)
    await page.waitForSelector('.composer textarea')
    await page.fill('.composer textarea', 'hang forever')
    await page.click('.composer .send')
    await page.waitForSelector('.composer .cancel:not([disabled])')
    await page.click('.composer .cancel')
    await page.waitForSelector('.session[data-status="idle"]')
    await turnStatus(page, 'aborted')
    const events = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: { type: string; data: { reason?: unknown } }[] }
    expect(events.events.find((e) => e.type === 'turn/end')?.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    await page.close()
  })

  it('raised no page errors or console errors (CSP included)', () => {
    expect(problems).toEqual([])
  })
})
