// Which interruptions count toward quarantine (docs/scaling.md, "Poison sessions and bystanders"): the original
// turn, and continuations that ran alone in their process (`session/continued-alone`). A continuation that shared
// its process with other running sessions is not counted, so a bystander of a poison session never reaches K by
// dying with it, however often.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, verifySessionLog, type Agent, type Harness } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'll-poison-count-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

// The "kill": the store is closed under the agent while the hanging body runs, so the log ends after its
// tool/call, as a process killed inside the body leaves it. `hang` runs in the session named `hang`.
const hang = defineTool({ name: 'hang', description: 'never returns', parameters: z.object({}), execute: () => new Promise<string>(() => {}) })
const model = scriptedAdapter({
  script: (request: GenerateOptions) => ({ toolCalls: [{ id: `h${request.messages.length}`, name: 'hang', arguments: {} }] }),
  models: { m1: { contextWindow: 100_000 } },
})

/** One process life: `open` the session, wait until its body hangs, then die. Returns the error code, if any. */
async function life(open: (h: Harness) => Promise<Agent>, beside?: (h: Harness) => Promise<void>): Promise<string | undefined> {
  const store = new JsonlStore({ dir })
  const harness = createHarness({ store, adapters: [model], tools: [hang], onListenerError: () => {} })
  try {
    await beside?.(harness)
    const agent = await open(harness)
    for (let i = 0; i < 500 && agent.session.events.at(-1)?.type !== 'tool/call'; i++) await new Promise((r) => setTimeout(r, 2))
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  } finally {
    await store.close()
  }
}

const start = (id: string) => async (h: Harness) => {
  const agent = await h.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  agent.followup('go')
  return agent
}

it('POISON-COUNT: continuations that shared their process are not counted; alone ones are, after the original turn', async () => {
  expect(await life(start('b'))).toBeUndefined() // the original turn: counted (1)
  // Five more crashes while the continuation shares its process: never quarantined.
  for (let i = 0; i < 5; i++) expect(await life((h) => h.resumeAgent('b', { alone: false }))).toBeUndefined()
  expect(await life((h) => h.resumeAgent('b', { alone: true }))).toBeUndefined() // alone: counted (2)
  expect(await life((h) => h.resumeAgent('b', { alone: true }))).toBeUndefined() // alone: counted (3)
  expect(await life((h) => h.resumeAgent('b', { alone: true }))).toBe('SESSION_QUARANTINED')
  const events = (await new JsonlStore({ dir }).read('b')).events
  expect(verifySessionLog(events).problems).toEqual([])
  const mark = events.find((e) => e.type === 'session/quarantined')?.data as { reason: string; interruptions: number[] }
  expect(mark.interruptions).toEqual([1, 7, 8])
  expect(mark.reason).toBe(
    'the same work was interrupted 3 times in a row (turns 1, 7, 8): only the original turn and continuations that ran alone in their process count; ' +
      'not counted: turns 2, 3, 4, 5, 6, interrupted while other sessions shared the process',
  )
  expect(events.filter((e) => e.type === 'session/continued-alone').map((e) => e.data)).toEqual([{ continues: 6 }, { continues: 7 }])
})

it('POISON-COUNT: by default a continuation is alone only when no other agent of the harness is running a turn', async () => {
  expect(await life(start('p'))).toBeUndefined()
  // Another session of the same harness runs a turn when `p` is resumed: `p`'s continuation is not alone.
  expect(await life((h) => h.resumeAgent('p'), async (h) => void (await start('other')(h)))).toBeUndefined()
  let events = (await new JsonlStore({ dir }).read('p')).events
  expect(events.filter((e) => e.type === 'session/continued-alone')).toEqual([])
  // Resumed by itself: alone.
  expect(await life((h) => h.resumeAgent('p'))).toBeUndefined()
  events = (await new JsonlStore({ dir }).read('p')).events
  expect(events.filter((e) => e.type === 'session/continued-alone').map((e) => e.data)).toEqual([{ continues: 2 }])
})
