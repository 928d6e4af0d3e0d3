import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { requireSystemTool } from '../support/system-tools.js'
import { launchChromium, openWatchedPage } from './browser.js'
import { BINARY, startRewindServe, type RewindServe } from './rewind-fixture.js'
import { TOKEN } from './serve-fixture.js'

// Each turn's file changes and "Rewind to here" on the page, in Chromium: a scripted session edits files over
// three turns (edit_file; a bash `sed -i` that also deletes a binary file, and write_file creating one;
// write_file and edit_file again). The conversation lists each turn's files, their diffs closed until opened;
// rewinding to turn 1 from the page restores the exact bytes and opens the fork with its one turn; a file
// edited outside the agent is a conflict there, and "force" restores it too.
let f: RewindServe
let browser: { context: BrowserContext; close: () => Promise<void> }
const problems: string[] = []
const browserNeeded = requireSystemTool('chromium', import.meta.url)

beforeAll(async () => {
  if (browserNeeded.skip) return
  f = await startRewindServe()
  browser = await launchChromium()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await f?.close()
})
beforeEach(() => f?.reset())

async function conversation(id: string): Promise<Page> {
  const page = await openWatchedPage(browser.context, `${f.base}/?token=${TOKEN}#/s/${id}/conversation`, problems)
  await page.locator('.chat-turn[data-turn="3"] .turn-files').waitFor()
  return page
}

/** The session, with the workspace's hashes right after turn 1. */
async function threeTurns(): Promise<{ id: string; afterOne: Record<string, string | null> }> {
  let afterOne: Record<string, string | null> = {}
  const id = await f.session(['one', 'two', 'three'], (turn) => {
    if (turn === 1) afterOne = f.hashes()
  })
  return { id, afterOne }
}

const fileRows = (page: Page, turn: number) => page.locator(`.chat-turn[data-turn="${turn}"] .turn-file`)

describe.skipIf(browserNeeded.skip)('REWIND-PAGE: file changes and rewind on the page (headless Chromium)', { timeout: 60_000 }, () => {
  it("shows each turn's changed files, their diffs closed until opened: added and removed lines coloured, created and deleted marked", async () => {
    const { id } = await threeTurns()
    const page = await conversation(id)
    const listed = async (turn: number): Promise<string[]> =>
      (await fileRows(page, turn).all()).length === 0 ? [] : await fileRows(page, turn).evaluateAll((rows) => rows.map((r) => `${r.querySelector('.file-kind')?.textContent} ${r.getAttribute('data-path')}`))
    expect(await listed(1)).toEqual(['modified a.txt'])
    expect(await listed(2)).toEqual(['modified b.txt', 'deleted c.bin', 'created sub/new.txt'])
    expect(await listed(3)).toEqual(['modified a.txt', 'modified b.txt'])
    expect(await page.locator('.turn-files .diff-lines').count()).toBe(0)

    const turn2 = page.locator('.chat-turn[data-turn="2"]')
    await turn2.locator('.turn-file[data-path="b.txt"] .turn-file-head').click()
    const bDiff = turn2.locator('.turn-file[data-path="b.txt"] .diff-lines')
    await bDiff.waitFor()
    expect(await bDiff.locator('.diff-del').allInnerTexts()).toEqual(['-bravo'])
    expect(await bDiff.locator('.diff-add').allInnerTexts()).toEqual(['+BRAVO'])
    expect(await bDiff.locator('.diff-ctx').allInnerTexts()).toEqual([' charlie'])
    expect(await turn2.locator('.turn-file[data-path="b.txt"] .turn-file-head').innerText()).toMatch(/\+1\s+−1/)
    const colours = (await page.evaluate(`['add', 'del', 'ctx'].map((k) => getComputedStyle(document.querySelector('.chat-turn[data-turn="2"] .turn-file[data-path="b.txt"] .diff-' + k)).backgroundColor)`)) as string[]
    expect(new Set(colours).size).toBe(3)

    await turn2.locator('.turn-file[data-path="sub/new.txt"] .turn-file-head').click()
    const created = turn2.locator('.turn-file[data-path="sub/new.txt"] .diff-lines')
    await created.waitFor()
    expect(await created.locator('.diff-add').allInnerTexts()).toEqual(['+created in turn 2', '+second line'])
    expect(await created.locator('.diff-del').count()).toBe(0)
    await turn2.locator('.turn-file[data-path="c.bin"] .turn-file-head').click()
    await turn2.locator('.turn-file[data-path="c.bin"] .diff-note', { hasText: 'binary file: not diffed' }).waitFor()
    expect(await turn2.locator('.turn-file.file-deleted .badge').innerText()).toBe('deleted')
    // Turn 1's file is still closed: each file opens on its own.
    expect(await page.locator('.chat-turn[data-turn="1"] .diff-lines').count()).toBe(0)
    // Opened again it closes, by keyboard too.
    await turn2.locator('.turn-file[data-path="b.txt"] .turn-file-head').focus()
    await page.keyboard.press('Enter')
    await bDiff.waitFor({ state: 'detached' })
    // No "Rewind to here" on the last turn: there is nothing after it to undo.
    expect(await page.locator('.chat-turn[data-turn="3"] .rewind-here').count()).toBe(0)
    expect(await page.locator('.rewind-here').count()).toBe(2)
    await page.close()
    expect(problems).toEqual([])
  })

  it('rewinds to turn 1 from the page: confirmation, the exact bytes back, the created file deleted, the fork opened with one turn', async () => {
    const { id, afterOne } = await threeTurns()
    const page = await conversation(id)
    const turn1 = page.locator('.chat-turn[data-turn="1"]')
    await turn1.locator('.rewind-here').click()
    const panel = turn1.locator('.rewind-panel')
    expect(await panel.innerText()).toMatch(/Rewind to the end of turn 1\? The 4 files the agent changed after it go back/)
    // Escape backs out: nothing happened.
    await page.keyboard.press('Escape')
    await panel.waitFor({ state: 'detached' })
    expect(f.hashes()).not.toEqual(afterOne)
    // The focus is back on the button, so the keyboard goes on from where it was.
    await turn1.locator('.rewind-here:focus').waitFor()

    await turn1.locator('.rewind-here').click()
    await panel.locator('.rewind-confirm').click()
    await panel.locator('.rewind-summary').waitFor()
    expect(await panel.locator('.rewind-restored code').allInnerTexts()).toEqual(['a.txt', 'b.txt', 'c.bin'])
    expect(await panel.locator('.rewind-deleted code').allInnerTexts()).toEqual(['sub/new.txt'])
    expect(await panel.locator('.rewind-conflict').count()).toBe(0)
    expect(f.hashes()).toEqual(afterOne)
    expect(readFileSync(join(f.root, 'c.bin')).equals(BINARY)).toBe(true)

    await panel.locator('.rewind-open').click()
    await page.waitForURL(/#\/s\/[^/]+\/conversation$/)
    const forkId = /#\/s\/([^/]+)\//.exec(page.url())?.[1] ?? ''
    expect(forkId).not.toBe(id)
    await page.locator('.restore-note').waitFor()
    expect(await page.locator('.chat-turn').count()).toBe(1)
    expect(await page.locator('.session-head .turn-count').innerText()).toBe('1 turn')
    expect(await page.locator('.restore-note').innerText()).toBe(`Files rewound to the end of turn 1 of ${id.slice(0, 8)}: restored a.txt, b.txt, c.bin; deleted sub/new.txt.`)
    expect(((await (await f.api(`/api/sessions/${forkId}`)).json()) as { header: { parentSession?: string } }).header.parentSession).toBe(id)
    await page.close()
    expect(problems).toEqual([])
  })

  it('shows a file edited outside the agent as a conflict, left as it is; force restores it and opens its fork', async () => {
    const { id, afterOne } = await threeTurns()
    writeFileSync(join(f.root, 'b.txt'), 'edited by hand\n')
    const page = await conversation(id)
    const panel = page.locator('.chat-turn[data-turn="1"] .rewind-panel')
    await page.locator('.chat-turn[data-turn="1"] .rewind-here').click()
    // The confirm button has the focus: Enter rewinds.
    await panel.locator('.rewind-confirm:focus').waitFor()
    await page.keyboard.press('Enter')
    await panel.locator('.rewind-summary').waitFor()
    expect(await panel.locator('.rewind-summary').innerText()).toMatch(/^Rewound to turn 1, with 1 conflict/)
    expect(await panel.locator('.rewind-conflict code').allInnerTexts()).toEqual(['b.txt'])
    expect(await panel.locator('.rewind-conflict').innerText()).toMatch(/changed outside the agent/)
    expect(await panel.locator('.rewind-restored code').allInnerTexts()).toEqual(['a.txt', 'c.bin'])
    expect(readFileSync(join(f.root, 'b.txt'), 'utf8')).toBe('edited by hand\n')

    await panel.locator('.rewind-force').click()
    await panel.locator('.rewind-summary', { hasText: /^Rewound to turn 1:/ }).waitFor()
    expect(await panel.locator('.rewind-restored code').allInnerTexts()).toEqual(['b.txt'])
    expect(await panel.locator('.rewind-conflict').count()).toBe(0)
    expect(f.hashes()).toEqual(afterOne)
    await panel.locator('.rewind-open').click()
    await page.locator('.restore-note').waitFor()
    expect(await page.locator('.chat-turn').count()).toBe(1)
    expect(await page.locator('.restore-note').innerText()).toMatch(/restored b\.txt\.$/)
    await page.close()
    expect(problems).toEqual([])
  })

  it('answers a rewind refused by the server in the panel (the session is running a turn)', async () => {
    const { id } = await threeTurns()
    const page = await conversation(id)
    await page.locator('.chat-turn[data-turn="1"] .rewind-here').click()
    await f.post(`/api/sessions/${id}/followup`, { text: 'hang on' })
    const deadline = Date.now() + 10_000
    while (f.server.input.status(id) !== 'running') {
      if (Date.now() > deadline) throw new Error('never running')
      await new Promise((r) => setTimeout(r, 20))
    }
    await page.locator('.chat-turn[data-turn="1"] .rewind-confirm').click()
    const alert = page.locator('.chat-turn[data-turn="1"] .rewind-panel .form-problem')
    await alert.waitFor()
    expect(await alert.innerText()).toMatch(/^OPEN_TURN: session '.+' is running a turn/)
    await f.post(`/api/sessions/${id}/cancel`)
    await f.settled(id, 4)
    await page.close()
    expect(problems.filter((p) => !/409/.test(p))).toEqual([])
    problems.length = 0
  })
})
