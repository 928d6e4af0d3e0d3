// Resume checkpoints on a log nobody touched since (issue 30, target 2): the checkpoint names the log file as its
// writer left it (inode, change time, size), and an open that finds it so reads only the header and anchor
// lines, hashing nothing. The content witnesses are then checked when the prefix is read, and the writer's
// running digest catches up there; until then the index keeps the witness that still holds.
import { closeSync, cpSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { encodeCheckpoint, parseCheckpoint, type ResumeCheckpoint } from '../../src/store/resume-checkpoint.js'
import { openFromCheckpoint } from '../../src/store/resume-jsonl.js'
import { ECHO, ID, recordTurns, turnSpec, type TurnSpec } from './resume-recorder.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})
const scratch = (): string => {
  const root = mkdtempSync(join(tmpdir(), 'll-resume-same-'))
  roots.push(root)
  return join(root, 's')
}
const logOf = (dir: string): string => join(dir, `${ID}.jsonl`)
const checkpointOf = (dir: string): ResumeCheckpoint => parseCheckpoint(readFileSync(join(dir, `${ID}.resume.json`), 'utf8'), ID) as ResumeCheckpoint
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

/** Whether an open of the log in `dir` now would hash it (undefined: the checkpoint would not be used). */
function wouldHash(dir: string): boolean | undefined {
  const fd = openSync(logOf(dir), 'r')
  try {
    return openFromCheckpoint({ dir, path: logOf(dir), id: ID, fd })?.hashed
  } finally {
    closeSync(fd)
  }
}

/** The content witness the session index last recorded for the session. */
function indexedWitness(dir: string): { bytes: number; sha256: string } | undefined {
  const lines = readFileSync(join(dir, '.index', 'sessions.jsonl'), 'utf8').trimEnd().split('\n')
  const entries = lines.map((l) => JSON.parse(l) as { id?: string; content?: { bytes: number; sha256: string } }).filter((e) => e.id === ID)
  return entries[entries.length - 1]?.content
}

/** What a resumed agent holds (as the other checkpoint tests compare it). */
async function resumed(dir: string): Promise<{ lazy: boolean; state: unknown }> {
  const harness = createHarness({ store: new JsonlStore({ dir }), tools: [ECHO], adapters: [scriptedAdapter({ script: [], models: { m1: {} } })] })
  const agent = await harness.resumeAgent(ID, { interrupted: 'close' })
  const lazy = agent.session.log.lazyPrefix !== undefined
  const state = { length: agent.session.length, lastTurn: agent.session.lastTurn, header: agent.session.requestHeader() ?? null, nextTurn: agent.inbox.nextTurn.map((m) => m.id), messages: agent.session.deriveMessages(), events: agent.session.events }
  await agent.dispose()
  await harness.close()
  return { lazy, state: JSON.parse(JSON.stringify(state)) }
}

const record = (dir: string, turns: readonly TurnSpec[], resume = false): Promise<string[]> => recordTurns(new JsonlStore({ dir }), turns, () => '', resume)

describe('resume checkpoints on an unchanged JSONL log', () => {
  it('an open of the log as its writer left it hashes nothing, and resumes as from the whole log', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(turnSpec, { minLength: 1, maxLength: 4 }), async (turns) => {
        const dir = scratch()
        await record(dir, turns)
        expect(wouldHash(dir)).toBe(false)
        const copy = `${dir}-whole`
        cpSync(dir, copy, { recursive: true })
        rmSync(join(copy, `${ID}.resume.json`))
        const fromCheckpoint = await resumed(dir)
        expect(fromCheckpoint.lazy).toBe(true)
        expect(fromCheckpoint.state).toEqual((await resumed(copy)).state)
      }),
      { numRuns: 8 },
    )
  }, 120_000)

  it('any change to the file since (here a chmod: a new change time) makes the open hash it all again', async () => {
    const dir = scratch()
    await record(dir, [{ text: 5, reasoning: 1, tool: true, steer: false }])
    expect(wouldHash(dir)).toBe(false)
    chmodSync(logOf(dir), 0o600)
    expect(wouldHash(dir)).toBe(true)
    // A copy is another file (another inode): hashed too.
    const copy = `${dir}-copy`
    cpSync(dir, copy, { recursive: true, preserveTimestamps: true })
    expect(wouldHash(copy)).toBe(true)
  }, 60_000)

  it("after a turn that read the prefix, the writer's witnesses cover the whole file again", async () => {
    const dir = scratch()
    await record(dir, [{ text: 5, reasoning: 1, tool: true, steer: false }, { text: 3, reasoning: 0, tool: false, steer: false }])
    expect(wouldHash(dir)).toBe(false)
    await record(dir, [{ text: 4, reasoning: 2, tool: true, steer: true }], true)
    const bytes = readFileSync(logOf(dir))
    const checkpoint = checkpointOf(dir)
    expect(checkpoint.anchor.at).toBe(bytes.length)
    expect(checkpoint.content).toEqual({ bytes: bytes.length, sha256: sha256(bytes) })
    expect(indexedWitness(dir)).toEqual({ bytes: bytes.length, sha256: sha256(bytes) })
    // And the next open is a fast one again.
    expect(wouldHash(dir)).toBe(false)
  }, 60_000)

  it('a writer that appends without reading the prefix records the witness that still holds (of the first bytes)', async () => {
    const dir = scratch()
    await record(dir, [{ text: 5, reasoning: 1, tool: false, steer: false }])
    const before = readFileSync(logOf(dir))
    const harness = createHarness({ store: new JsonlStore({ dir }), tools: [ECHO], adapters: [scriptedAdapter({ script: [], models: { m1: {} } })] })
    const agent = await harness.resumeAgent(ID, { interrupted: 'close' })
    agent.inject('for later')
    await agent.flush()
    expect(agent.session.log.lazyPrefix).toBeDefined()
    await agent.dispose()
    await harness.close()
    const after = readFileSync(logOf(dir))
    expect(after.length).toBeGreaterThan(before.length)
    const witness = indexedWitness(dir)
    expect(witness).toEqual({ bytes: before.length, sha256: sha256(before) })
    expect(sha256(after.subarray(0, witness?.bytes))).toBe(witness?.sha256)
  }, 60_000)

  it('a witness the prefix does not give, found when the prefix is read, refuses the session (SESSION_CORRUPT)', async () => {
    const dir = scratch()
    await record(dir, [{ text: 5, reasoning: 1, tool: true, steer: false }])
    const checkpoint = checkpointOf(dir)
    const forged: ResumeCheckpoint = { ...checkpoint, content: { bytes: checkpoint.anchor.at, sha256: '0'.repeat(64) } }
    // Writing the checkpoint leaves the log as it was: the open is still a fast one, and trusts nothing it hashed.
    writeFileSync(join(dir, `${ID}.resume.json`), encodeCheckpoint(forged), { mode: 0o600 })
    expect(wouldHash(dir)).toBe(false)
    const harness = createHarness({ store: new JsonlStore({ dir }), tools: [ECHO], adapters: [scriptedAdapter({ script: [], models: { m1: {} } })] })
    const agent = await harness.resumeAgent(ID, { interrupted: 'close' })
    expect(() => agent.session.deriveMessages()).toThrow(expect.objectContaining({ code: 'SESSION_CORRUPT', message: expect.stringMatching(/not what was written .*changed in place/) }))
    await agent.dispose()
    await harness.close()
  }, 60_000)
})
