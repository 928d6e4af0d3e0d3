/**
 * Regenerates docs/serve-file-changes.png and docs/serve-rewind.png: `node --import tsx scripts/rewind-screenshot.ts`. Runs the three
 * editing turns of test/server/rewind-fixture.ts on a fresh server, edits a file by hand, opens turn 2's diffs
 * and "Rewind to here" on turn 1 (answered with a conflict) and photographs the conversation in headless Chromium.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { launchChromium } from '../test/server/browser.js'
import { startRewindServe } from '../test/server/rewind-fixture.js'
import { TOKEN } from '../test/server/serve-fixture.js'

const docs = join(import.meta.dirname, '../docs')
const f = await startRewindServe()
const browser = await launchChromium({ width: 1440, height: 900 })
try {
  const id = await f.session(['one', 'two', 'three'])
  writeFileSync(join(f.root, 'b.txt'), 'edited by hand\n')
  const page = await browser.context.newPage()
  await page.goto(`${f.base}/?token=${TOKEN}#/s/${id}/conversation`)
  const turn2 = page.locator('.chat-turn[data-turn="2"]')
  await turn2.locator('.turn-files').waitFor()
  for (const path of ['b.txt', 'sub/new.txt', 'c.bin']) {
    await turn2.locator(`.turn-file[data-path="${path}"] .turn-file-head`).click()
    await turn2.locator(`.turn-file[data-path="${path}"] .turn-file-diff`).waitFor()
  }
  await turn2.locator('.turn-file[data-path="sub/new.txt"] .diff-lines').waitFor()
  // The conversation scrolls in its own box: bring turn 2's files to its top (the window itself stays put).
  const show = async (selector: string): Promise<void> => {
    await page.evaluate(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)})
      const box = el.closest('.conversation')
      box.scrollTop += el.getBoundingClientRect().top - box.getBoundingClientRect().top - 60
    })()`)
  }
  await show('.chat-turn[data-turn="2"] .turn-files')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-file-changes.png') })

  await page.locator('.chat-turn[data-turn="1"] .rewind-here').click()
  await page.locator('.chat-turn[data-turn="1"] .rewind-confirm').click()
  await page.locator('.chat-turn[data-turn="1"] .rewind-summary').waitFor()
  await show('.chat-turn[data-turn="1"] .turn-files')
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(docs, 'serve-rewind.png') })
  await page.close()
} finally {
  await browser.close()
  await f.close()
}
