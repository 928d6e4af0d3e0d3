// A runtime-context snapshot survives a resume from a checkpoint (issue 30, target 2; seed §4 LOOP-RUNTIME-CONTEXT):
// the resumed agent finds the newest snapshot still in history among the messages the checkpoint kept for the
// unread prefix, so an unchanged context adds no new snapshot and a changed one adds exactly one.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarness, RUNTIME_CONTEXT_PLUGIN, scriptedAdapter, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})
const scratch = (): string => {
  const root = mkdtempSync(join(tmpdir(), 'll-resume-ctx-'))
  roots.push(root)
  return root
}

const STORES: Record<string, (root: string) => SessionStore> = {
  jsonl: (root) => new JsonlStore({ dir: join(root, 's') }),
  sqlite: (root) => new SqliteStore({ path: join(root, 's.db') }),
}

/** Opens a harness whose prompt carries a `clock` context section reading `clock.text`. */
function open(store: SessionStore, clock: { text: string }, answers: number) {
  const model = scriptedAdapter({ script: Array.from({ length: answers }, (_, i) => ({ text: `answer ${i}` })), models: { m1: {} } })
  const harness = createHarness({ store, adapters: [model] })
  harness.prompt.context('clock', { text: () => clock.text })
  return harness
}

const snapshotTexts = (events: readonly { type: string; data: unknown }[]): string[] =>
  events
    .filter((e) => e.type === 'user/message' && (e.data as { source: { plugin?: string } }).source.plugin === RUNTIME_CONTEXT_PLUGIN)
    .map((e) => (e.data as { content: { text: string }[] }).content[0]?.text ?? '')

describe.each(Object.keys(STORES))('runtime context across a checkpoint resume (%s)', (kind) => {
  it('the resumed agent knows its last snapshot: unchanged adds none, changed adds one', async () => {
    const root = scratch()
    const clock = { text: 'tick 0' }
    const first = open(STORES[kind]!(root), clock, 12)
    const agent = await first.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'ctx' })
    // Twelve turns, each with a new clock: twelve snapshots, all of them in history.
    for (let t = 0; t < 12; t++) {
      clock.text = `tick ${t}`
      agent.followup(`prompt ${t}`)
      await agent.whenIdle()
    }
    expect(snapshotTexts(agent.session.events)).toHaveLength(12)
    await agent.dispose()
    await first.close()

    const second = open(STORES[kind]!(root), clock, 2)
    const again = await second.resumeAgent('ctx')
    expect(again.session.log.lazyPrefix, 'resumed from the checkpoint').toBeDefined()
    const before = again.session.length
    again.followup('unchanged clock')
    await again.whenIdle()
    clock.text = 'tick 12'
    again.followup('changed clock')
    await again.whenIdle()
    const added = snapshotTexts(again.session.events.slice(before))
    expect(added).toHaveLength(1)
    expect(added[0]).toContain('tick 12')
    await again.dispose()
    await second.close()
  }, 60_000)
})
