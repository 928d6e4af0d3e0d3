/**
 * Regenerates docs/serve-list.png, docs/serve-search.png, docs/serve-timeline.png, docs/serve-conversation.png,
 * docs/serve-approval.png and docs/serve-compare.png: `node --import tsx scripts/serve-screenshots.ts`.
 * Runs a few scripted sessions on a fresh server (completed with tools, cancelled, failed, waiting for an
 * approval, and a stored one with reasoning, a refused call, a retry and a failed turn) and photographs the page
 * in headless Chromium. Also times opening a long session.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { launchChromium } from '../test/server/browser.js'
import { builtinTools, createHarness, invariantPlugin, JsonlStore, scriptedAdapter, type ScriptStep } from '../src/index.js'
import type { GenerateOptions } from '../src/llm/types.js'
import { createLedgerServer } from '../src/server/index.js'
import { serveScript, serveTools, startServe, TOKEN } from '../test/server/serve-fixture.js'
import { writeStoredSession } from '../test/server/stored-session.js'

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

// A second server with the built-in file tools on a scratch folder: an edit_file waiting for approval, with its
// diff against the file.
async function photographEditApproval(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'ledgerloop-shot-'))
  writeFileSync(join(root, 'config.yaml'), 'service: api\nreplicas: 2\nimage: api:1.4.2\nport: 8080\n')
  const edit = { toolCalls: [{ name: 'edit_file', arguments: { path: 'config.yaml', oldText: 'replicas: 2\nimage: api:1.4.2', newText: 'replicas: 3\nimage: api:1.5.0' } }] }
  const files = await createLedgerServer({
    store: new JsonlStore({ dir: join(root, '.sessions') }),
    agents: {
      adapters: [scriptedAdapter({ script: [{ text: 'I will bump the image and add a replica.', ...edit }, { text: 'Done.' }] })],
      tools: builtinTools({ root }),
      defaults: { provider: 'scripted', model: 'm1' },
      cwd: root,
    },
    token: TOKEN,
    port: 0,
  })
  const base = await files.listen()
  try {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
    const { id } = (await (await fetch(`${base}/api/sessions`, { method: 'POST', headers, body: '{}' })).json()) as { id: string }
    await fetch(`${base}/api/sessions/${id}/followup`, { method: 'POST', headers, body: JSON.stringify({ text: 'roll out api 1.5.0 with one more replica' }) })
    const page = await browser.context.newPage()
    await page.goto(`${base}/?token=${TOKEN}#/s/${id}/conversation`)
    await page.waitForSelector('.approval .diff-lines')
    await page.waitForTimeout(300)
    await page.screenshot({ path: join(docs, 'serve-approval.png') })
    await page.close()
  } finally {
    await files.close()
    rmSync(root, { recursive: true, force: true })
  }
}

// A third server with a second provider whose model words things its own way and checks files itself: a session
// rerun on it through the API, compared with its original.
async function photographCompare(): Promise<void> {
  const other = (request: GenerateOptions): ScriptStep => {
    const last = request.messages[request.messages.length - 1]
    const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
    if (last?.content[0]?.type === 'tool-result') return { text: 'The log says the build passed.', usage: { inputTokens: 40, outputTokens: 7 } }
    if (text.startsWith('echo')) return { toolCalls: [{ name: 'echo', arguments: { text: 'build log, last 20 lines' } }], usage: { inputTokens: 22, outputTokens: 6 } }
    return { text: 'Hello! What shall we look at next?', usage: { inputTokens: 12, outputTokens: 8 } }
  }
  const g = await startServe({
    agents: {
      adapters: [
        scriptedAdapter({ script: serveScript, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
        scriptedAdapter({ provider: 'other', script: other, models: { o1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
      ],
      tools: serveTools(),
      plugins: [invariantPlugin()],
      defaults: { provider: 'scripted', model: 'm1' },
      permissions: { allow: ['echo'] },
      pollMs: 50,
    },
  })
  try {
    const { id } = (await (await g.post('/api/sessions', {})).json()) as { id: string }
    for (const [i, text] of ['echo the build log', 'hello'].entries()) {
      await g.post(`/api/sessions/${id}/followup`, { text })
      await g.until(async () => ((await (await g.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns > i)
    }
    const { id: rerun } = (await (await g.post(`/api/sessions/${id}/rerun`, { provider: 'other', model: 'o1' })).json()) as { id: string }
    await g.until(async () => {
      const s = (await (await g.api(`/api/sessions/${rerun}`)).json()) as { turns: number; status: string }
      return s.turns === 2 && s.status === 'stored'
    })
    const page = await browser.context.newPage()
    await page.goto(`${g.base}/?token=${TOKEN}#/compare?a=${id}&b=${rerun}`)
    await page.waitForSelector('.cmp-turn >> nth=1')
    await page.waitForTimeout(300)
    await page.screenshot({ path: join(docs, 'serve-compare.png') })
    await page.close()
  } finally {
    await g.close()
  }
}

try {
  await photographCompare()
  const main = await session(['echo the build log', 'slow summary of it', 'echo once more', 'hello'])
  await session(['hello there'])
  const cancelled = await session(['hang until cancelled'], false)
  await new Promise((r) => setTimeout(r, 300))
  await f.post(`/api/sessions/${cancelled}/cancel`)
  const deploying = await session(['deploy the release'], false)
  const stored = await writeStoredSession(f.dir)
  await new Promise((r) => setTimeout(r, 500))

  const page = await browser.context.newPage()
  await page.goto(`${f.base}/?token=${TOKEN}`)
  await page.waitForSelector('table.sessions tbody tr >> nth=3')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-list.png') })

  // Content search: the sessions whose prompts, answers or tool output hold the text, each with its snippet.
  await page.getByLabel('search session content').fill('build log')
  await page.waitForSelector('.content-match')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-search.png') })
  await page.getByLabel('search session content').fill('')

  await page.goto(`${f.base}/#/s/${main}`)
  await page.waitForSelector('.row.kind-tool')
  await page.locator('.row.kind-step').nth(3).click()
  await page.waitForSelector('.request-panel')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-timeline.png') })

  await page.goto(`${f.base}/#/s/${stored}/conversation`)
  await page.waitForSelector('.chat-error')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-conversation.png') })

  await page.goto(`${f.base}/#/s/${deploying}/conversation`)
  await page.waitForSelector('.approval .approval-args')
  await photographEditApproval()

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
  const t1 = Date.now()
  await page.goto(`${f.base}/#/s/${long}/conversation`)
  await page.waitForSelector('.chat-tool >> nth=799')
  const conversed = Date.now() - t1
  // The same on the small session, to tell the page's work from this machine's load.
  await page.goto(`${f.base}/#/s/${main}`)
  await page.waitForSelector('.row.kind-turn')
  const small = (await page.evaluate(perKey)) as number
  const rendered = await page.locator('.row').count()
  const rows = ((await (await f.api(`/api/sessions/${long}/timeline`)).json()) as { rows: unknown[] }).rows.length
  console.log(`a ${events}-event session (${rows} timeline rows): opened in ${opened} ms (its conversation in ${conversed} ms), 50 × PageDown (each to the next frame) in ${scrolled} ms (a 20-row session: ${small} ms), ${rendered} row elements in the DOM`)
} finally {
  await browser.close()
  await f.close()
}
