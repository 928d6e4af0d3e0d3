import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness, defineTool, JsonlStore, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import { requireSystemTool } from '../support/system-tools.js'
import { launchChromium, openWatchedPage } from './browser.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

// Content search on the page (issue 30, target 6), in Chromium over `serve`: four stored sessions, where the
// word "quillwort" is in one session's tool output (inside markup, which must show as text) and in another's
// answer, and only in places search never reads in a third (its reasoning and a tool call's arguments). Typing
// the word lists exactly the first two, each with its part and its snippet, the word marked; text nobody wrote
// shows the empty state; a failed search says so; clearing brings every session back.
const WORD = 'quillwort'
const SESSIONS = { tool: 'search-tool-output', answer: 'search-answer', hidden: 'search-hidden', plain: 'search-plain' } as const

let f: ServeFixture
let dir: string
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

/** Writes the four sessions through the loop into a JSONL store in `root` (their content index as it is kept). */
async function writeSessions(root: string): Promise<void> {
  const outputs: Record<string, string> = { shelf: 'shelf 4 holds <b>Quillwort</b> & ferns' }
  const lookup = defineTool({ name: 'lookup', description: 'Looks a key up', parameters: z.object({ key: z.string() }), execute: ({ key }) => outputs[key] ?? 'no such key' })
  const scripts: Record<string, { prompt: string; steps: ScriptStep[] }> = {
    [SESSIONS.tool]: { prompt: 'check the inventory', steps: [{ toolCalls: [{ name: 'lookup', arguments: { key: 'shelf' } }] }, { text: 'The shelf is stocked.' }] },
    [SESSIONS.answer]: { prompt: 'what grows by the pond?', steps: [{ text: ['By the pond: ', 'reeds and quillwort', ', mostly.'] }] },
    [SESSIONS.hidden]: { prompt: 'look something up', steps: [{ reasoning: 'maybe quillwort?', toolCalls: [{ name: 'lookup', arguments: { key: WORD } }] }, { text: 'Nothing found.' }] },
    [SESSIONS.plain]: { prompt: 'say hello', steps: [{ text: 'hello back' }] },
  }
  const store = new JsonlStore({ dir: root })
  for (const [id, { prompt, steps }] of Object.entries(scripts)) {
    const harness = createHarness({ store, tools: [lookup], adapters: [scriptedAdapter({ script: steps, models: { m1: { contextWindow: 100_000 } } })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
    await agent.run(prompt)
    await harness.close()
  }
}

beforeAll(async () => {
  if (browserNeeded.skip) return
  dir = mkdtempSync(join(tmpdir(), 'ledgerloop-search-page-'))
  await writeSessions(dir)
  f = await startServe({ store: new JsonlStore({ dir }) })
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const listedIds = (page: Page): Promise<string[]> => page.locator('table.sessions tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id') ?? ''))
const countLine = (page: Page, text: string) => page.locator('.list-count', { hasText: text }).waitFor()

describe.skipIf(browserNeeded.skip)('SEARCH-PAGE: content search on the sessions page (headless Chromium)', { timeout: 60_000 }, () => {
  it('lists exactly the sessions whose tool output or answer holds the word, with escaped, marked snippets; empty state, error and clearing', async () => {
    const page = await openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}`, problems, (text) => text.includes('500'))
    const searches: string[] = []
    page.on('request', (request) => {
      const grep = new URL(request.url()).searchParams.get('grep')
      if (grep !== null) searches.push(grep)
    })
    await countLine(page, '4 sessions')
    expect((await listedIds(page)).sort()).toEqual(Object.values(SESSIONS).sort())

    // Typed key by key faster than the debounce: one search, for the whole word (upper case: case-insensitive).
    const box = page.getByLabel('search session content')
    await box.pressSequentially(WORD.toUpperCase(), { delay: 20 })
    await countLine(page, `2 sessions containing “${WORD.toUpperCase()}”`)
    expect((await listedIds(page)).sort()).toEqual([SESSIONS.answer, SESSIONS.tool].sort())
    expect(new Set(searches)).toEqual(new Set([WORD.toUpperCase()]))

    const match = (id: string) => page.locator(`tr[data-id="${id}"] .content-match`)
    expect(await match(SESSIONS.tool).getAttribute('data-part')).toBe('tool-output')
    expect(await match(SESSIONS.tool).locator('.match-part').innerText()).toMatch(/tool output/i)
    // The tool's markup is shown as text: no <b> element on the page, the tags in the snippet's text.
    expect(await match(SESSIONS.tool).locator('.match-snippet').innerText()).toBe('shelf 4 holds <b>Quillwort</b> & ferns')
    expect(await match(SESSIONS.tool).locator('.match-snippet b').count()).toBe(0)
    expect(await match(SESSIONS.tool).locator('mark').allInnerTexts()).toEqual(['Quillwort'])
    expect(await match(SESSIONS.answer).getAttribute('data-part')).toBe('answer')
    expect(await match(SESSIONS.answer).locator('.match-snippet').innerText()).toBe('By the pond: reeds and quillwort, mostly.')
    expect(await match(SESSIONS.answer).locator('mark').allInnerTexts()).toEqual(['quillwort'])

    // Text no session holds: the empty state says what was searched, and offers to clear it.
    await box.fill('pond quillwort')
    await page.locator('.search-empty', { hasText: 'No session\'s prompts, answers or tool output contain “pond quillwort”' }).waitFor()
    expect(await listedIds(page)).toEqual([])

    // A search the server fails is shown beside the list, with no stale rows left standing as matches.
    await page.route('**/api/sessions?*', (route) =>
      new URL(route.request().url()).searchParams.has('grep')
        ? route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { code: 'INTERNAL', message: 'index unavailable' } }) })
        : route.continue(),
    )
    await box.fill('ferns')
    await page.locator('.search-error', { hasText: 'Search for “ferns” failed: index unavailable' }).waitFor()
    expect(await listedIds(page)).toEqual([])
    await page.unroute('**/api/sessions?*')

    // Clearing (the empty state's button after another miss) brings back every session, without snippets.
    await box.fill('nobody wrote this')
    await page.locator('.search-empty button', { hasText: 'Clear search' }).click()
    await countLine(page, '4 sessions')
    expect(await box.inputValue()).toBe('')
    expect((await listedIds(page)).sort()).toEqual(Object.values(SESSIONS).sort())
    expect(await page.locator('.content-match').count()).toBe(0)
    expect(problems).toEqual([])
    await page.close()
  })
})
