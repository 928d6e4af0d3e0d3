import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openWatchedPage } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { writeStoredSession } from './stored-session.js'

// The waterfall as people read it, in Chromium at a wide and a narrow window: no label overlaps or is clipped,
// failures are named on their rows, refused calls read "denied", the keys work at once, and text is readable.
let f: ServeFixture
let stored: string
let long: string
let single: string
const browsers: { context: BrowserContext; close: () => Promise<void> }[] = []
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

async function settle(id: string, turns: number): Promise<void> {
  await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns >= turns)
}

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startServe()
  stored = await writeStoredSession(f.dir)
  long = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
  const prompts = ['echo the build log', 'slow summary of it', 'echo once more', 'hello']
  for (const [i, text] of prompts.entries()) {
    await f.post(`/api/sessions/${long}/followup`, { text })
    await settle(long, i + 1)
  }
  single = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
  await f.post(`/api/sessions/${single}/followup`, { text: 'hello' })
  await settle(single, 1)
}, 60_000)
afterAll(async () => {
  for (const b of browsers) await b.close()
  await f?.close()
})

async function openPage(width: number, hash: string, token: string | null = TOKEN): Promise<Page> {
  const browser = await launchChromium({ width, height: 900 })
  browsers.push(browser)
  // The wrong-token test provokes 401s on purpose.
  return openWatchedPage(browser.context, `${f.base}/${token !== null ? `?token=${token}` : ''}${hash}`, problems, (text) => text.includes('401'))
}

// Every label of the waterfall with its box, the box of what would clip it, and whether its text overflows.
// (Browser code is passed as text: the test's TypeScript has no DOM types.)
const MEASURE = `(() => {
  const box = (el) => { const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom } }
  const labels = []
  const add = (el, container, group, name, strict) => labels.push({ name, group, text: el.textContent, box: box(el), container: box(container), overflows: strict && el.scrollWidth > el.clientWidth + 1 })
  const waterfall = document.querySelector('.waterfall')
  const axis = document.querySelector('.axis')
  add(axis.querySelector('.axis-label'), axis, 'axis', 'axis-label', true)
  for (const tick of axis.querySelectorAll('.tick')) add(tick, axis, 'axis', 'tick', true)
  for (const row of document.querySelectorAll('.row')) {
    const group = 'row ' + row.dataset.index
    const label = row.querySelector('.row-label')
    // The name may end in an ellipsis (its full text is the row's title); its box must still stay inside.
    add(label.querySelector('.name'), label, group, 'name', false)
    add(label.querySelector('.status'), label, group, 'status', true)
    const text = row.querySelector('.bar-text')
    if (text !== null) add(text, row, group, 'bar-text', true)
  }
  return { labels, waterfall: box(waterfall) }
})()`

interface Box { left: number; right: number; top: number; bottom: number }
interface Label { name: string; group: string; text: string; box: Box; container: Box; overflows: boolean }

function intersects(a: Box, b: Box): boolean {
  return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5
}
function inside(a: Box, b: Box): boolean {
  return a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5
}

async function layoutProblems(page: Page): Promise<string[]> {
  const { labels, waterfall } = (await page.evaluate(MEASURE)) as { labels: Label[]; waterfall: Box }
  const found: string[] = []
  for (const l of labels) {
    if (l.box.right - l.box.left <= 0) continue
    if (!inside(l.box, l.container) || !inside(l.box, waterfall)) found.push(`${l.group} ${l.name} "${l.text}" is clipped`)
    if (l.overflows) found.push(`${l.group} ${l.name} "${l.text}" overflows its box`)
  }
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i] as Label
      const b = labels[j] as Label
      if (intersects(a.box, b.box)) found.push(`${a.group} ${a.name} "${a.text}" overlaps ${b.group} ${b.name} "${b.text}"`)
    }
  }
  expect(labels.filter((l) => l.name === 'bar-text').length).toBeGreaterThan(3)
  return found
}

describe.skipIf(browserNeeded.skip)('the waterfall as people read it (headless Chromium)', { timeout: 40_000 }, () => {
  for (const width of [1440, 760]) {
    it(`lays out every label without overlap or clipping at ${width} px`, async () => {
      for (const id of [long, stored]) {
        const page = await openPage(width, `#/s/${id}`)
        await page.waitForSelector('.row.kind-request')
        await page.waitForTimeout(100)
        expect(await layoutProblems(page)).toEqual([])
        await page.close()
      }
    })
  }

  it("names failures on their rows, reads a refused call as denied, and shows a failed request's code and message", async () => {
    const page = await openPage(1440, `#/s/${stored}`)
    await page.waitForSelector('.row.kind-request')
    const turn2 = page.locator('.row.kind-turn').nth(1)
    expect(await turn2.locator('.status').innerText()).toBe('error AUTH')
    await turn2.locator('.bar-text', { hasText: 'AUTH: invalid api key' }).waitFor({ timeout: 5000 })
    const failed = page.locator('.row.kind-request', { has: page.locator('.status', { hasText: 'RATE_LIMIT' }) })
    // The figures beside a bar are shortened when the bar sits where the full text fits on neither side (real
    // timings place it): the code always shows on the row, the message in its tooltip and its panel.
    await failed.locator('.bar-text', { hasText: 'RATE_LIMIT' }).waitFor({ timeout: 5000 })
    expect(await failed.getAttribute('title')).toContain('RATE_LIMIT (HTTP 429): too many requests')
    expect(await page.locator('.row.kind-tool .status').allInnerTexts()).toEqual(['ok', 'denied'])
    await failed.click()
    expect(await page.locator('.request-failed').innerText()).toBe('This request failed: RATE_LIMIT · HTTP 429 too many requests')
    await page.locator('.row.kind-tool').nth(1).click()
    expect(await page.locator('.tool-panel').innerText()).toContain('denied · TOOL_DENIED')
    await page.close()
  })

  it('says "1 turn" for one turn, and moves with ↑/↓ and opens with Enter without a click first', async () => {
    const page = await openPage(1440, `#/s/${single}`)
    await page.waitForSelector('.row.kind-request')
    expect(await page.locator('.turn-count').innerText()).toBe('1 turn')
    expect(await page.locator('.axis-label').innerText()).toBe('1 turn · 1 request')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    expect(await page.locator('.row.selected').getAttribute('data-kind')).toBe('request')
    await page.keyboard.press('ArrowUp')
    expect(await page.locator('.row.selected').getAttribute('data-kind')).toBe('step')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('Enter')
    await page.waitForSelector('.request-panel[data-request="1"]')
    // The sessions list too: arrows and Enter right after it loads.
    await page.goto(`${f.base}/#/`)
    await page.locator('table.sessions tbody tr').nth(2).waitFor()
    await page.keyboard.press('ArrowDown')
    const second = await page.locator('table.sessions tbody tr.focused').getAttribute('data-id')
    await page.keyboard.press('Enter')
    await page.waitForSelector('.session')
    expect(page.url()).toContain(`#/s/${String(second)}`)
    await page.close()
  })

  it('tells a wrong token from a missing one', async () => {
    const wrong = await openPage(1440, '', 'not-the-token')
    expect(await wrong.locator('.token-problem').innerText()).toContain('That token is not valid for this server')
    await wrong.close()
    const none = await openPage(1440, '', null)
    expect(await none.locator('.token-problem').innerText()).toContain('This server needs its access token')
    await none.close()
    const missing = (await (await fetch(`${f.base}/api/sessions`)).json()) as { error: { message: string } }
    const bad = (await (await fetch(`${f.base}/api/sessions`, { headers: { authorization: 'Bearer nope' } })).json()) as { error: { message: string } }
    expect(missing.error.message).toContain('a token is required')
    expect(bad.error.message).toContain("the token given is not this server's")
  })

  it('keeps text readable: every status, badge and figure has at least 4.5:1 contrast', async () => {
    const page = await openPage(1440, `#/s/${stored}`)
    await page.waitForSelector('.row.kind-request')
    const CONTRAST = `(() => {
      const rgb = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return { r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1 } }
      const over = (top, under) => ({ r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a), b: top.b * top.a + under.b * (1 - top.a), a: 1 })
      const background = (el) => {
        const layers = []
        for (let e = el; e !== null; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.a > 0) layers.push(c) }
        return layers.reverse().reduce((under, top) => over(top, under), { r: 255, g: 255, b: 255, a: 1 })
      }
      const lum = (c) => [c.r, c.g, c.b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4 }).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0)
      const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05) }
      return [...document.querySelectorAll('.badge, .row-label .status, .bar-text, .reason')].map((el) => {
        const bg = background(el)
        return { text: el.textContent, ratio: Math.round(ratio(over(rgb(getComputedStyle(el).color), bg), bg) * 100) / 100 }
      })
    })()`
    const measured = (await page.evaluate(CONTRAST)) as { text: string; ratio: number }[]
    expect(measured.length).toBeGreaterThan(10)
    expect(measured.filter((m) => m.ratio < 4.5)).toEqual([])
    await page.close()
  })

  it('raised no page errors or console errors', () => {
    expect(problems).toEqual([])
  })
})
