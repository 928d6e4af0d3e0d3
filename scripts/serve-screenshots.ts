/**
 * Regenerates docs/serve-list.png and docs/serve-timeline.png: `node --import tsx scripts/serve-screenshots.ts`.
 * Runs a few scripted sessions on a fresh server (completed with tools, cancelled, failed, waiting for an
 * approval) and photographs the page in headless Chromium. Also times opening a 10,000-event session.
 */
import { join } from 'node:path'
import { launchChromium } from '../test/server/browser.js'
import { createHarness, JsonlStore, scriptedAdapter } from '../src/index.js'
import { serveTools, startServe, TOKEN } from '../test/server/serve-fixture.js'

const docs = join(import.meta.dirname, '../docs')
const f = await startServe()
const browser = await launchChromium({ width: 1440, height: 900 })

async function session(prompts: string[], settle = true): Promise<string> {
  const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
  for (const text of prompts) {
    const before = ((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns
    await f.post(`/api/sessions/${id}/followup`, { text })
    if (!settle) break
    await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }).turns > before)
  }
  return id
}

try {
  const main = await session(['echo the build log', 'slow summary of it', 'echo once more', 'hello'])
  await session(['hello there'])
  const cancelled = await session(['hang until cancelled'], false)
  await new Promise((r) => setTimeout(r, 300))
  await f.post(`/api/sessions/${cancelled}/cancel`)
  await session(['deploy the release'], false)
  await new Promise((r) => setTimeout(r, 500))

  const page = await browser.context.newPage()
  await page.goto(`${f.base}/?token=${TOKEN}`)
  await page.waitForSelector('table.sessions tbody tr >> nth=3')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-list.png') })

  await page.goto(`${f.base}/#/s/${main}`)
  await page.waitForSelector('.row.kind-tool')
  await page.locator('.row.kind-step').nth(3).click()
  await page.waitForSelector('.request-panel')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-timeline.png') })

  // A long session, written by another harness on the same folder: one turn of 800 tool-call steps.
  const other = createHarness({
    store: new JsonlStore({ dir: f.dir }),
    adapters: [scriptedAdapter({ script: (_request, i) => (i < 800 ? { text: `step ${i}`, toolCalls: [{ name: 'echo', arguments: { text: String(i) } }] } : { text: 'done' }), recordRequests: false })],
    tools: serveTools(),
  })
  const agent = await other.createAgent({ provider: 'scripted', model: 'm1' })
  agent.followup('a long one')
  await agent.whenIdle()
  const long = agent.id
  await other.close()
  const events = ((await (await f.api(`/api/sessions/${long}`)).json()) as { events: number }).events
  const t0 = Date.now()
  await page.goto(`${f.base}/#/s/${long}`)
  await page.waitForSelector('.row.kind-turn')
  const opened = Date.now() - t0
  // Time the page's own work per key (in the page, so the driver's round trips do not count).
  const perKey = `(async () => {
    const rows = document.querySelector('.rows')
    rows.focus()
    const t = performance.now()
    for (let i = 0; i < 50; i++) {
      rows.dispatchEvent(new KeyboardEvent('keydown', { key: 'PageDown', bubbles: true }))
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))
    }
    return Math.round(performance.now() - t)
  })()`
  const scrolled = (await page.evaluate(perKey)) as number
  // The same on the small session, to tell the page's work from this machine's load.
  await page.goto(`${f.base}/#/s/${main}`)
  await page.waitForSelector('.row.kind-turn')
  const small = (await page.evaluate(perKey)) as number
  const rendered = await page.locator('.row').count()
  const rows = ((await (await f.api(`/api/sessions/${long}/timeline`)).json()) as { rows: unknown[] }).rows.length
  console.log(`a ${events}-event session (${rows} timeline rows): opened in ${opened} ms, 50 × PageDown (each to the next frame) in ${scrolled} ms (a 20-row session: ${small} ms), ${rendered} row elements in the DOM`)
} finally {
  await browser.close()
  await f.close()
}
