import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter } from '../../src/index.js'
import { durabilityMarks, formatSessionTree } from '../../src/cli/commands/inspect.js'
import { listSessionsPage, sessionsTable } from '../../src/cli/commands/sessions.js'
import { styleFor } from '../../src/cli/style.js'
import { buildSessionTree } from '../../src/views/session-tree.js'
import { writeQuarantinedSession } from '../server/stored-session.js'

// `ledgerloop sessions` and `inspect` on a quarantined session, then on the same session resumed with force:
// the quarantine is listed with its reason, and the continuation turn says which interrupted turn it carries on.
it('sessions lists a quarantined session with its reason; inspect prints the quarantine, then "continued after a crash"', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'll-marks-'))
  try {
    const id = await writeQuarantinedSession(dir)
    const plain = styleFor({ isTTY: false })
    const store = new JsonlStore({ dir })
    const page = await listSessionsPage(store, {})
    const row = page.rows.find((r) => r.id === id)
    expect(row?.quarantined).toMatch(/interrupted 1 times? in a row \(turns 1\)/)
    expect(sessionsTable(page.rows)).toMatch(new RegExp(`${id}.*\\[quarantined: the same work was interrupted`))
    const before = await store.read(id)
    const quarantinedTree = formatSessionTree(buildSessionTree(before.header, before.events), plain, undefined, durabilityMarks(before.events))
    expect(quarantinedTree).toContain(`quarantined since seq`)
    expect(quarantinedTree).toContain(`run --session ${id} --force`)
    await store.close()

    const harness = createHarness({ store: new JsonlStore({ dir }), adapters: [scriptedAdapter({ script: [{ text: 'finished now' }] })] })
    const agent = await harness.resumeAgent(id, { force: true, provider: 'scripted', model: 'm1' })
    await agent.whenIdle()
    await harness.close()
    const after = await new JsonlStore({ dir }).read(id)
    const tree = formatSessionTree(buildSessionTree(after.header, after.events), plain, undefined, durabilityMarks(after.events))
    expect(tree).not.toContain('quarantined since')
    expect(tree).toMatch(/turn 2 · completed[^\n]*\n {2}continued after a crash: carries on turn 1, which was interrupted/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
