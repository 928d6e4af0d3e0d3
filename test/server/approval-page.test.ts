import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builtinTools, invariantPlugin, JsonlStore, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { createLedgerServer, type LedgerServer } from '../../src/server/index.js'
import { launchChromium } from './browser.js'
import { requireSystemTool } from '../support/system-tools.js'
import { TOKEN } from './serve-fixture.js'

// What an approval approves, in Chromium: the built-in file tools and bash asking through the page, each shown
// with the diff against the file as it is now, or the command, before the person decides.
let server: LedgerServer
let base: string
let home: string
let root: string
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

// The model: `rewrite` replaces notes.md, `edit` edits one line of it, `new` writes a new file, `list` runs a command.
function script(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  if (last?.content[0]?.type === 'tool-result') return { text: 'done' }
  const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
  if (text === 'rewrite') return { toolCalls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'one\nTWO\nthree\nfour\n' } }] }
  if (text === 'edit') return { toolCalls: [{ name: 'edit_file', arguments: { path: 'notes.md', oldText: 'three', newText: 'three and a half' } }] }
  if (text === 'new') return { toolCalls: [{ name: 'write_file', arguments: { path: 'docs/new.md', content: '# New\n' } }] }
  if (text === 'escape') return { toolCalls: [{ name: 'write_file', arguments: { path: '../outside.txt', content: 'replaced\n' } }] }
  if (text === 'list') return { toolCalls: [{ name: 'bash', arguments: { command: 'ls -la docs' } }] }
  return { text: 'hello' }
}

beforeAll(async () => {
  if (browserNeeded.skip) return
  home = mkdtempSync(join(tmpdir(), 'ledgerloop-approvals-'))
  root = join(home, 'work')
  mkdirSync(root)
  mkdirSync(join(home, 'sessions'))
  writeFileSync(join(root, 'notes.md'), 'one\ntwo\nthree\n')
  writeFileSync(join(home, 'outside.txt'), 'SECRET outside the root\n')
  server = await createLedgerServer({
    store: new JsonlStore({ dir: join(home, 'sessions') }),
    agents: {
      adapters: [scriptedAdapter({ script, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } })],
      // The calls are answered before they could run; bash is denied, so no sandbox is needed.
      tools: builtinTools({ root, shell: true, sandbox: 'off' }),
      plugins: [invariantPlugin()],
      defaults: { provider: 'scripted', model: 'm1' },
      cwd: root,
      pollMs: 50,
    },
    token: TOKEN,
    port: 0,
  })
  base = await server.listen()
  browser = await launchChromium({ width: 1200, height: 900 })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await server?.close()
  if (home !== undefined) rmSync(home, { recursive: true, force: true })
})

async function ask(text: string): Promise<Page> {
  const created = await fetch(`${base}/api/sessions`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{}' })
  const { id } = (await created.json()) as { id: string }
  const page = await browser.context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  await page.goto(`${base}/?token=${TOKEN}#/s/${id}`)
  await page.fill('.composer textarea', text)
  await page.click('.composer .send')
  await page.locator('.approval').waitFor()
  return page
}

const lines = (page: Page, kind: string) => page.locator(`.approval .diff-${kind}`).allInnerTexts()

describe.skipIf(browserNeeded.skip)('approvals show what they approve (headless Chromium)', { timeout: 30_000 }, () => {
  it('shows a write_file as a diff against the current file, says it once, and approving writes it', async () => {
    const page = await ask('rewrite')
    await page.locator('.approval .diff-lines').waitFor()
    expect(await page.locator('.approval .approval-text').innerText()).toBe('write_file notes.md needs your approval')
    expect((await page.locator('.approval').innerText()).match(/needs/g)).toHaveLength(1)
    expect(await page.locator('.approval .diff-head').innerText()).toBe('notes.md changes · +2 −1')
    expect(await lines(page, 'del')).toEqual(['-two'])
    expect(await lines(page, 'add')).toEqual(['+TWO', '+four'])
    expect(await lines(page, 'ctx')).toEqual([' one', ' three'])
    await page.locator('.approval button.approve').click()
    await page.locator('.approval').waitFor({ state: 'detached' })
    await page.locator('.row.kind-turn .status', { hasText: /^completed$/ }).waitFor()
    expect(readFileSync(join(root, 'notes.md'), 'utf8')).toBe('one\nTWO\nthree\nfour\n')
    await page.close()
  })

  it('shows an edit_file as the lines it changes in the file, and a write of a new file as all added', async () => {
    const page = await ask('edit')
    await page.locator('.approval .diff-lines').waitFor()
    expect(await lines(page, 'del')).toEqual(['-three'])
    expect(await lines(page, 'add')).toEqual(['+three and a half'])
    expect(await lines(page, 'ctx')).toEqual([' one', ' TWO', ' four'])
    await page.locator('.approval button.deny').click()
    await page.locator('.approval').waitFor({ state: 'detached' })
    expect(readFileSync(join(root, 'notes.md'), 'utf8')).toBe('one\nTWO\nthree\nfour\n')
    await page.close()
    const fresh = await ask('new')
    await fresh.locator('.approval .diff-lines').waitFor()
    expect(await fresh.locator('.approval .diff-head').innerText()).toBe('docs/new.md new file · +1 −0')
    expect(await fresh.locator('.approval .diff-hunk').innerText()).toBe('@@ −0,0 +1,1 @@')
    expect(await lines(fresh, 'add')).toEqual(['+# New'])
    await fresh.locator('.approval button.deny').click()
    await fresh.close()
  })

  it('shows the command of a bash call', async () => {
    const page = await ask('list')
    expect(await page.locator('.approval .approval-command').innerText()).toBe('$ ls -la docs')
    await page.locator('.approval button.deny').click()
    await page.locator('.approval').waitFor({ state: 'detached' })
    await page.close()
  })

  it('never reads a file outside the working folder for a preview', async () => {
    const page = await ask('escape')
    await page.locator('.approval .diff-note').waitFor()
    expect(await page.locator('.approval .diff-note').innerText()).toContain('PATH_OUTSIDE_ROOT')
    expect(await page.locator('.approval').innerText()).not.toContain('SECRET')
    expect(await lines(page, 'add')).toEqual(['+replaced'])
    await page.locator('.approval button.deny').click()
    await page.close()
  })

  it('raised no page errors or console errors', () => {
    expect(problems).toEqual([])
  })
})
