// Resume checkpoints (issue 30, target 2): resuming from a checkpoint and the tail after it gives what resuming
// from the whole log gives, for random logs and random cut points; a checkpoint that is damaged, stale or of
// another log is ignored, never trusted; without any checkpoint everything still works.
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { ECHO as echo, ID, recordTurns, turnSpec, type TurnSpec } from './resume-recorder.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})
const scratch = (): string => {
  const root = mkdtempSync(join(tmpdir(), 'll-resume-cp-'))
  roots.push(root)
  return root
}

/** Records a session turn by turn; after each turn, a copy of the checkpoint then beside the log. */
function record(dir: string, turns: readonly TurnSpec[]): Promise<string[]> {
  return recordTurns(new JsonlStore({ dir }), turns, (i) => {
    const copy = join(dir, `..`, `cp-${i}.json`)
    copyFileSync(join(dir, `${ID}.resume.json`), copy)
    return copy
  })
}

/** What a resumed agent holds, and whether it resumed from a checkpoint (its log's prefix still unread). */
async function resumed(dir: string): Promise<{ lazy: boolean; state: unknown }> {
  const harness = createHarness({ store: new JsonlStore({ dir }), tools: [echo], adapters: [scriptedAdapter({ script: [], models: { m1: {} } })] })
  const agent = await harness.resumeAgent(ID, { interrupted: 'close' })
  const session = agent.session
  const lazy = session.log.lazyPrefix !== undefined
  const state = {
    length: session.length,
    lastTurn: session.lastTurn,
    openTurn: session.openTurn ?? null,
    header: session.requestHeader() ?? null,
    context: session.requestContext() ?? null,
    nextTurn: agent.inbox.nextTurn.map((m) => m.id),
    nextStep: agent.inbox.nextStep.map((m) => m.id),
    // Reading the history reads the prefix in; that read checks the prefix against the checkpoint's fold.
    messages: session.deriveMessages(),
    events: session.events,
  }
  await agent.dispose()
  await harness.close()
  return { lazy, state: JSON.parse(JSON.stringify(state)) }
}

/** A copy of the recorded folder with `checkpoint` (text, or none) as the session's checkpoint. */
function copyWith(dir: string, checkpoint: string | undefined): string {
  const fresh = join(scratch(), 's')
  cpSync(dir, fresh, { recursive: true })
  rmSync(join(fresh, `${ID}.resume.json`), { force: true })
  if (checkpoint !== undefined) writeFileSync(join(fresh, `${ID}.resume.json`), checkpoint, { mode: 0o600 })
  return fresh
}

describe('resume checkpoints (JSONL)', () => {
  it('resume from a checkpoint and its tail equals resume from the whole log, at random cut points', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(turnSpec, { minLength: 1, maxLength: 5 }), fc.nat(), async (turns, pick) => {
        const dir = join(scratch(), 's')
        const copies = await record(dir, turns)
        const cut = pick % copies.length
        const whole = await resumed(copyWith(dir, undefined))
        const fromCheckpoint = await resumed(copyWith(dir, readFileSync(copies[cut] as string, 'utf8')))
        expect(whole.lazy).toBe(false)
        expect(fromCheckpoint.lazy).toBe(true)
        expect(fromCheckpoint.state).toEqual(whole.state)
      }),
      { numRuns: 12 },
    )
  }, 120_000)

  it('a checkpoint damaged anywhere is ignored, and the session resumes as from the whole log', async () => {
    const dir = join(scratch(), 's')
    const copies = await record(dir, [
      { text: 12, reasoning: 2, tool: true, steer: false },
      { text: 30, reasoning: 0, tool: false, steer: true },
      { text: 5, reasoning: 1, tool: true, steer: false },
    ])
    const whole = await resumed(copyWith(dir, undefined))
    const text = readFileSync(copies[1] as string, 'utf8')
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: text.length - 1 }), fc.integer({ min: 0x20, max: 0x7e }), async (at, code) => {
        fc.pre(text.charCodeAt(at) !== code)
        const damaged = text.slice(0, at) + String.fromCharCode(code) + text.slice(at + 1)
        const got = await resumed(copyWith(dir, damaged))
        expect(got.lazy).toBe(false)
        expect(got.state).toEqual(whole.state)
      }),
      { numRuns: 15 },
    )
  }, 120_000)

  it('a stale checkpoint (of another log with the same id, or past a cut log) is ignored', async () => {
    const a = join(scratch(), 's')
    const b = join(scratch(), 's')
    const spec = [
      { text: 8, reasoning: 1, tool: false, steer: false },
      { text: 8, reasoning: 1, tool: true, steer: false },
    ]
    const fromA = await record(a, spec)
    await record(b, spec)
    // Another log under the same id: its header (created at another time) does not match.
    const other = await resumed(copyWith(b, readFileSync(fromA[1] as string, 'utf8')))
    expect(other.lazy).toBe(false)
    expect(other.state).toEqual((await resumed(copyWith(b, undefined))).state)
    // The log cut before the checkpoint's anchor (and its index gone, so the cut loads as a torn tail).
    const cut = copyWith(a, readFileSync(fromA[1] as string, 'utf8'))
    const checkpoint = JSON.parse(readFileSync(fromA[1] as string, 'utf8').split('\n')[1] as string) as { anchor: { at: number } }
    truncateSync(join(cut, `${ID}.jsonl`), checkpoint.anchor.at - 3)
    rmSync(join(cut, '.index'), { recursive: true, force: true })
    const reference = copyWith(cut, undefined)
    const got = await resumed(cut)
    expect(got.lazy).toBe(false)
    expect(got.state).toEqual((await resumed(reference)).state)
  }, 60_000)

  it('the writer keeps a checkpoint beside the log, and with every checkpoint deleted the session still resumes and goes on', async () => {
    const dir = join(scratch(), 's')
    await record(dir, [{ text: 3, reasoning: 0, tool: false, steer: false }])
    expect(existsSync(join(dir, `${ID}.resume.json`))).toBe(true)
    rmSync(join(dir, `${ID}.resume.json`))
    const got = await resumed(dir)
    expect(got.lazy).toBe(false)
    // The full open wrote a checkpoint for the next one.
    expect(existsSync(join(dir, `${ID}.resume.json`))).toBe(true)
    expect((await resumed(dir)).lazy).toBe(true)
  }, 60_000)
})
