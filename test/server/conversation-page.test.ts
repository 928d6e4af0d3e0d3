import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { writeCutOffSessions, writeStoredSession } from './stored-session.js'

// The conversation view of the page, in Chromium: a stored session (written by another harness, so this server
// never ran it) and a live one the page drives.
let f: ServeFixture
let browser: { context: BrowserContext; close: () => Promise<void> }
let stored: string
let cutOff: { orphaned: string; interrupted: string }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startServe()
  stored = await writeStoredSession(f.dir)
  cutOff = await writeCutOffSessions(f.dir)
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
})

async function openPage(hash: string): Promise<Page> {
  return openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}${hash}`, problems)
}

describe.skipIf(browserNeeded.skip)('the conversation view (headless Chromium)', { timeout: 30_000 }, () => {
  it("shows a stored session's prompts and answers, reasoning collapsed, tool calls with results, and a turn's error with its hint", async () => {
    const page = await openPage(`#/s/${stored}`)
    await page.waitForSelector('.row.kind-turn')
    expect(await page.locator('.session .id').innerText()).not.toContain('live')
    await page.getByRole('tab', { name: 'Conversation' }).click()
    const turns = page.locator('.chat-turn')
    await turns.first().waitFor()
    expect(await turns.count()).toBe(2)
    const first = turns.nth(0)
    expect(await first.locator('.chat-prompt').innerText()).toContain('check the service')
    const answers = await first.locator('.answer-text').allInnerTexts()
    expect(answers).toEqual(['Let me check.', 'All checked: echo answered, and deploying was refused.'])
    // Reasoning is there, folded away until opened.
    const reasoning = first.locator('details.chat-reasoning')
    expect(await reasoning.getAttribute('open')).toBeNull()
    expect(await first.locator('.reasoning-text').isVisible()).toBe(false)
    await reasoning.locator('summary').click()
    expect(await first.locator('.reasoning-text').innerText()).toBe('The user wants a check. I will echo first.')
    // Tool calls: arguments, result, the decision; a refused call reads "denied".
    const echo = first.locator('.chat-tool', { has: page.locator('.tool-name', { hasText: 'echo' }) })
    expect(await echo.locator('.badge').innerText()).toBe('ok')
    expect(await echo.locator('.tool-args').innerText()).toContain('"text": "ping"')
    expect(await echo.locator('.tool-result-text').innerText()).toBe('echo: ping')
    expect(await echo.locator('.tool-decision').innerText()).toBe('allowed by rule echo')
    const deploy = first.locator('.chat-tool', { has: page.locator('.tool-name', { hasText: 'deploy' }) })
    expect(await deploy.locator('.badge').innerText()).toBe('denied')
    expect(await deploy.innerText()).toContain('TOOL_DENIED')
    // The rate-limited attempt, retried, between the tool calls and the final answer.
    expect(await first.locator('.chat-retry').innerText()).toMatch(/request 1 failed\s+RATE_LIMIT\s+too many requests/)
    const order = await first.locator('.chat-item').evaluateAll((items) => items.map((i) => i.className.split(' ')[1]))
    expect(order).toEqual(['chat-prompt', 'chat-answer', 'chat-tool', 'chat-tool', 'chat-retry', 'chat-answer'])
    // Turn 2 failed: its code, HTTP status, message and what to do.
    const error = turns.nth(1).locator('.chat-error')
    const text = await error.innerText()
    expect(text).toContain('AUTH · HTTP 401')
    expect(text).toContain('invalid api key')
    expect(await error.locator('.chat-hint').innerText()).toContain('API key')
    expect(page.url()).toMatch(/\/conversation$/)
    // A draft survives switching views.
    await page.fill('.composer textarea', 'half-written question')
    await page.getByRole('tab', { name: 'Timeline' }).click()
    await page.waitForSelector('.row.kind-turn')
    expect(await page.inputValue('.composer textarea')).toBe('half-written question')
    await page.close()
  })

  it('follows a live session: the streamed reply, then the committed answer once, and a pending approval', async () => {
    const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
    const page = await openPage(`#/s/${id}/conversation`)
    await page.waitForSelector('.conversation')
    await page.fill('.composer textarea', 'slow stream')
    await page.click('.composer .send')
    await page.locator('.chat-turn[data-status="completed"]').waitFor()
    expect(await page.locator('.answer-text').allInnerTexts()).toEqual([Array.from({ length: 10 }, (_, i) => `part${i} `).join('')])
    expect(await page.locator('.chat-answer.streaming').count()).toBe(0)
    await page.fill('.composer textarea', 'deploy it')
    await page.click('.composer .send')
    const waiting = page.locator('.chat-tool', { has: page.locator('.badge', { hasText: 'waiting for approval' }) })
    await waiting.waitFor()
    expect(await waiting.locator('.tool-args').innerText()).toContain('"target": "staging"')
    expect(await page.locator('.activity').innerText()).toMatch(/^waiting for your approval of deploy .*\(turn 2, step 1\)$/)
    await page.locator('.approval button.approve').click()
    await page.locator('.chat-turn[data-turn="2"][data-status="completed"]').waitFor()
    const deploy = page.locator('.chat-turn[data-turn="2"] .chat-tool')
    expect(await deploy.locator('.badge').innerText()).toBe('ok')
    expect(await deploy.locator('.tool-decision').innerText()).toBe('allowed by you')
    expect(await deploy.locator('.tool-result-text').innerText()).toBe('deployed to staging')
    await page.close()
  })

  it('says why a session was interrupted, and that a turn no process runs is open in its log', async () => {
    const page = await openPage(`#/s/${cutOff.interrupted}/conversation`)
    await page.locator('.chat-turn[data-status="interrupted"]').waitFor()
    expect(await page.locator('.activity').innerText()).toContain('turn 1 was interrupted: the process running it stopped')
    const tool = page.locator('.chat-tool')
    expect(await tool.locator('.badge').innerText()).toBe('failed')
    expect(await tool.innerText()).toContain('TOOL_OUTCOME_UNKNOWN')
    expect(await tool.locator('.chat-hint').innerText()).toContain('check whether its effect happened')
    expect(await page.locator('.chat-end').innerText()).toContain('interrupted (closed by crash repair)')
    await page.goto(`${f.base}/#/s/${cutOff.orphaned}/conversation`)
    await page.locator('.chat-turn[data-status="open"]').waitFor()
    expect(await page.locator('.activity').innerText()).toContain('turn 1 is open in the log but no process runs it')
    expect(await page.locator('.chat-tool .badge').innerText()).toBe('no result')
    expect(await page.locator('.chat-turn-head .reason').innerText()).toBe('open, not running')
    await page.close()
  })

  it('raised no page errors or console errors', () => {
    expect(problems).toEqual([])
  })
})
