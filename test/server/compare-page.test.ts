import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { invariantPlugin, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { serveScript, serveTools, startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

// The compare view and a session's "Compare with…" / "Rerun on…" actions, in Chromium (issue 25). The server has
// a second provider whose model answers in other words and never calls a tool, so a rerun on it differs.
let f: ServeFixture
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

function otherScript(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
  return { text: text.startsWith('echo') ? 'I will not echo that.' : 'hello there back', usage: { inputTokens: 8, outputTokens: 4 } }
}

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startServe({
    agents: {
      adapters: [
        scriptedAdapter({ script: serveScript, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
        scriptedAdapter({ provider: 'other', script: otherScript, models: { o1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
      ],
      tools: serveTools(),
      plugins: [invariantPlugin()],
      defaults: { provider: 'scripted', model: 'm1' },
      permissions: { allow: ['echo'] },
      pollMs: 50,
    },
  })
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
})
afterEach(() => {
  expect(problems).toEqual([])
})

async function openPage(hash: string): Promise<Page> {
  // The page's own refusals (a 400 it shows in a form) are logged by Chromium as failed loads: not problems.
  return openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}${hash}`, problems, (text) => /Failed to load resource/.test(text))
}

function hashOf(page: Page): string {
  return new URL(page.url()).hash
}

async function recorded(prompts: readonly string[]): Promise<string> {
  const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
  for (const [i, text] of prompts.entries()) {
    await f.post(`/api/sessions/${id}/followup`, { text })
    await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns > i)
  }
  return id
}

async function stored(id: string, turns: number): Promise<void> {
  await f.until(async () => {
    const s = (await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }
    return s.turns >= turns && s.status === 'stored'
  })
}

describe.skipIf(browserNeeded.skip)('the compare view and the rerun action (headless Chromium)', { timeout: 40_000 }, () => {
  it('"Rerun on…" starts a rerun on another model and opens it; its header says whose rerun it is; the compare view marks what differs', async () => {
    const original = await recorded(['hi there', 'echo ping'])
    const page = await openPage(`#/s/${original}`)
    await page.getByRole('button', { name: 'Rerun on…' }).click()
    const form = page.getByRole('form', { name: 'rerun on' })
    await form.getByLabel('provider').fill('other')
    await form.getByLabel('model').fill('o1')
    await form.getByRole('button', { name: 'Start rerun' }).click()
    await page.waitForURL((url) => /^#\/s\/[A-Za-z0-9._-]+$/.test(url.hash) && url.hash !== `#/s/${original}`)
    const rerun = hashOf(page).slice('#/s/'.length)
    await stored(rerun, 2)
    const rerunOf = page.locator('.rerun-of')
    await rerunOf.waitFor()
    expect(await rerunOf.innerText()).toContain(`rerun of ${original.slice(0, 8)}`)

    // From the rerun's header to the comparison with its original.
    await rerunOf.getByRole('link', { name: 'compare with it' }).click()
    await page.waitForSelector('.cmp-turn')
    expect(hashOf(page)).toBe(`#/compare?a=${original}&b=${rerun}`)
    expect(await page.locator('.cmp-verdict').innerText()).toBe('behaviour differs in turns 1, 2')
    expect(await page.locator('.cmp-session').nth(1).innerText()).toContain('other/o1')
    const first = page.locator('.cmp-turn[data-turn="1"]')
    expect(await first.locator('.badge').innerText()).toBe('differs')
    // The changed words are marked on each side: "hello back" → "hello there back".
    expect(await first.locator('.cmp-side').nth(0).innerText()).toContain('hello back')
    expect(await first.locator('mark.cmp-added').allInnerTexts()).toEqual(['there'])
    expect(await first.locator('mark.cmp-removed').count()).toBe(0)
    // Turn 2: the original's echo call has no twin in the rerun.
    const second = page.locator('.cmp-turn[data-turn="2"]')
    expect(await second.locator('.cmp-side').nth(0).locator('.cmp-call.cmp-changed code').innerText()).toBe('echo')
    expect(await second.locator('.cmp-side').nth(1).innerText()).toContain('no tool calls')
    expect(await second.locator('.cmp-differences').innerText()).toMatch(/echo/)

    // Ignoring texts, turn 1 is the same; turn 2 still differs by its tool call.
    await page.getByLabel('ignore final texts').check()
    await page.locator('.cmp-verdict', { hasText: /^behaviour differs in turn 2$/ }).waitFor()
    expect(await page.locator('.cmp-turn[data-turn="1"] .badge').innerText()).toBe('same')
    expect(hashOf(page)).toContain('ignoreText=true')
    await page.close()
  })

  it('"Compare with…" picks another session; identical sessions compare the same; bad ids say so', async () => {
    const a = await recorded(['hi there'])
    const b = await recorded(['hi there'])
    const page = await openPage(`#/s/${b}`)
    await page.getByRole('button', { name: 'Compare with…' }).click()
    const form = page.getByRole('form', { name: 'compare with' })
    await form.getByLabel('session to compare with').selectOption(a)
    await form.getByRole('button', { name: 'Compare' }).click()
    await page.waitForSelector('.cmp-turn')
    expect(hashOf(page)).toBe(`#/compare?a=${a}&b=${b}`)
    expect(await page.locator('.cmp-verdict').innerText()).toBe('same behaviour')
    expect(await page.locator('mark').count()).toBe(0)
    await page.getByRole('link', { name: 'swap A and B' }).click()
    await page.waitForURL((url) => url.hash === `#/compare?a=${b}&b=${a}`)
    await page.locator('.cmp-session').first().filter({ hasText: b }).waitFor()

    await page.goto(`${f.base}/#/compare?a=${a}&b=no-such-session`)
    await page.getByRole('alert').filter({ hasText: 'no-such-session' }).waitFor()
    await page.goto(`${f.base}/#/compare?a=${a}`)
    await page.getByRole('alert').filter({ hasText: 'Name two sessions' }).waitFor()
    expect(await page.getByRole('alert').count()).toBe(1)
    await page.close()
  })

  it('"Rerun on…" shows why the server refused, and stays on the session', async () => {
    const original = await recorded(['hi there'])
    const page = await openPage(`#/s/${original}`)
    await page.getByRole('button', { name: 'Rerun on…' }).click()
    const form = page.getByRole('form', { name: 'rerun on' })
    await form.getByLabel('provider').fill('nowhere')
    await form.getByRole('button', { name: 'Start rerun' }).click()
    expect(await form.getByRole('alert').innerText()).toContain("NO_ADAPTER: no adapter for provider 'nowhere'")
    await form.getByLabel('provider').fill('')
    await form.getByLabel('from turn').fill('3')
    await form.getByRole('button', { name: 'Start rerun' }).click()
    await form.getByRole('alert').filter({ hasText: 'INVALID_CONFIG' }).waitFor()
    expect(hashOf(page)).toBe(`#/s/${original}`)
    expect((await f.store.list()).filter((s) => s.forkedFrom === original)).toEqual([])
    await page.close()
  })
})
