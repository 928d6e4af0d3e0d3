import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import type { SessionEvent } from '../../src/session/events.js'
import { verifySessionLog } from '../../src/session/verify.js'
import { builtinTools } from '../../src/tools/builtin/index.js'
import { STORE_KINDS, type StoreKit } from '../store/store-kits.js'

const MODELS = { m: { defaultMaxTokens: 100, contextWindow: 100_000 } }
const BINARY = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

const hash = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

// Three turns over a workspace of a.txt, b.txt and c.bin: turn 1 edits a.txt; turn 2 runs `sed -i` on b.txt,
// deletes c.bin and creates new.txt; turn 3 edits a.txt again and runs a bash command that changes b.txt and
// then fails.
const SCRIPT: ScriptStep[] = [
  { toolCalls: [{ id: 't1', name: 'edit_file', arguments: { path: 'a.txt', oldText: 'alpha', newText: 'ALPHA' } }] },
  { text: 'turn 1 done' },
  {
    toolCalls: [
      { id: 't2a', name: 'bash', arguments: { command: "sed -i 's/bravo/BRAVO/' b.txt && rm c.bin" } },
      { id: 't2b', name: 'write_file', arguments: { path: 'sub/new.txt', content: 'created in turn 2\n' } },
    ],
  },
  { text: 'turn 2 done' },
  {
    toolCalls: [
      { id: 't3a', name: 'edit_file', arguments: { path: 'a.txt', oldText: 'ALPHA', newText: 'ALPHA!' } },
      { id: 't3b', name: 'bash', arguments: { command: 'echo more >> b.txt; exit 3' } },
    ],
  },
  { text: 'turn 3 done' },
  // A turn in a fork, after a rewind.
  { text: 'a turn in the fork' },
]

interface Scene {
  readonly harness: Harness
  readonly root: string
  readonly sessionId: string
  /** Hashes of the workspace files right after turn 1. */
  readonly afterTurn1: Record<string, string | null>
}

function snapshot(root: string): Record<string, string | null> {
  const of = (name: string): string | null => (existsSync(join(root, name)) ? hash(readFileSync(join(root, name))) : null)
  return { 'a.txt': of('a.txt'), 'b.txt': of('b.txt'), 'c.bin': of('c.bin'), 'sub/new.txt': of('sub/new.txt') }
}

async function scene(kit: StoreKit, roots: string[]): Promise<Scene> {
  const root = mkdtempSync(join(tmpdir(), 'll-rewind-'))
  roots.push(root)
  writeFileSync(join(root, 'a.txt'), 'alpha\n')
  writeFileSync(join(root, 'b.txt'), 'bravo\n')
  writeFileSync(join(root, 'c.bin'), BINARY)
  const harness = createHarness({
    store: kit.store,
    adapters: [scriptedAdapter({ script: SCRIPT, models: MODELS })],
    tools: builtinTools({ root, shell: true, sandbox: 'off' }),
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', cwd: root })
  let afterTurn1: Record<string, string | null> = {}
  for (const prompt of ['one', 'two', 'three']) {
    agent.followup(prompt)
    await agent.whenIdle()
    if (prompt === 'one') afterTurn1 = snapshot(root)
  }
  return { harness, root, sessionId: agent.id, afterTurn1 }
}

const turnsOf = (events: readonly SessionEvent[]): number => events.filter((e) => e.type === 'turn/end').length

for (const kind of STORE_KINDS) {
  describe(`rewind on ${kind.name}`, () => {
    const roots: string[] = []
    let kit: StoreKit | undefined
    beforeAll(async () => kind.setup?.())
    afterAll(async () => kind.teardown?.())
    afterEach(async () => {
      await kit?.cleanup()
      kit = undefined
      for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
    })

    it('logs which call changed which path, the failing bash command included', async () => {
      kit = kind.make()
      const { harness, sessionId } = await scene(kit, roots)
      const events = (await kit.store.read(sessionId)).events
      const records = events.filter((e) => e.type === 'checkpoint/files').map((e) => e.data as unknown as { callId: string; paths: string[] })
      expect(records.map((r) => [r.callId, r.paths])).toEqual([
        ['t1', ['a.txt']],
        ['t2a', ['b.txt', 'c.bin']],
        ['t2b', ['sub/new.txt']],
        ['t3a', ['a.txt']],
        ['t3b', ['b.txt']],
      ])
      expect(verifySessionLog(events).problems).toEqual([])
      await harness.close()
    })

    it('rewinds to turn 1: exact bytes back, the created file deleted, a fork of one turn; again changes nothing', async () => {
      kit = kind.make()
      const { harness, root, sessionId, afterTurn1 } = await scene(kit, roots)
      const result = await harness.rewind(sessionId, { toTurn: 1 })
      expect(result.restored).toEqual(['a.txt', 'b.txt', 'c.bin'])
      expect(result.deleted).toEqual(['sub/new.txt'])
      expect(result.conflicts).toEqual([])
      expect(snapshot(root)).toEqual(afterTurn1)
      expect(readFileSync(join(root, 'c.bin')).equals(BINARY)).toBe(true)
      expect(afterTurn1['sub/new.txt']).toBeNull()

      expect(result.sessionId).not.toBe(sessionId)
      const fork = (await kit.store.read(result.sessionId)).events
      expect(turnsOf(fork)).toBe(1)
      expect(verifySessionLog(fork).problems).toEqual([])
      const restored = fork.filter((e) => e.type === 'checkpoint/restored')
      expect(restored).toHaveLength(1)
      expect(restored[0]?.data).toMatchObject({ session: sessionId, toTurn: 1, restored: ['a.txt', 'b.txt', 'c.bin'], deleted: ['sub/new.txt'] })
      // The original gets no new conversation events.
      expect(turnsOf((await kit.store.read(sessionId)).events)).toBe(3)

      const again = await harness.rewind(sessionId, { toTurn: 1 })
      expect({ restored: again.restored, deleted: again.deleted, conflicts: again.conflicts }).toEqual({ restored: [], deleted: [], conflicts: [] })
      expect(snapshot(root)).toEqual(afterTurn1)
      await harness.close()
    })

    it('rewinding a fork later never brings back what the rewind that made it removed', async () => {
      kit = kind.make()
      const { harness, root, sessionId, afterTurn1 } = await scene(kit, roots)
      const { sessionId: forkId } = await harness.rewind(sessionId, { toTurn: 1 })
      const fork = await harness.resumeAgent(forkId)
      fork.followup('four')
      await fork.whenIdle()
      await fork.dispose()
      const again = await harness.rewind(forkId, { toTurn: 1 })
      expect({ restored: again.restored, deleted: again.deleted, conflicts: again.conflicts }).toEqual({ restored: [], deleted: [], conflicts: [] })
      expect(snapshot(root)).toEqual(afterTurn1)
      // The fork's own files-only rewind to before its first turn undoes turn 1 of the lineage as well.
      const toStart = await harness.rewind(forkId, { toTurn: 0, conversation: false })
      expect(toStart.restored).toEqual(['a.txt'])
      expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('alpha\n')
      await harness.close()
    })

    it('leaves a path changed outside the agent as a conflict, restores the rest, and force restores it too', async () => {
      kit = kind.make()
      const { harness, root, sessionId, afterTurn1 } = await scene(kit, roots)
      writeFileSync(join(root, 'b.txt'), 'edited by a person\n')
      const first = await harness.rewind(sessionId, { toTurn: 1, conversation: false })
      expect(first.sessionId).toBe(sessionId)
      expect(first.conflicts.map((c) => c.path)).toEqual(['b.txt'])
      expect(first.conflicts[0]?.reason).toMatch(/changed outside the agent/)
      expect(first.restored).toEqual(['a.txt', 'c.bin'])
      expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('edited by a person\n')

      const forced = await harness.rewind(sessionId, { toTurn: 1, conversation: false, force: true })
      expect(forced.conflicts).toEqual([])
      expect(forced.restored).toEqual(['b.txt'])
      expect(snapshot(root)).toEqual(afterTurn1)
      const events = (await kit.store.read(sessionId)).events
      expect(events.filter((e) => e.type === 'checkpoint/restored')).toHaveLength(2)
      await harness.close()
    })

    it('refuses a turn that never ended, and bad options, touching nothing', async () => {
      kit = kind.make()
      const { harness, root, sessionId } = await scene(kit, roots)
      const before = snapshot(root)
      await expect(harness.rewind(sessionId, { toTurn: 7 })).rejects.toMatchObject({ code: 'INVALID_BOUNDARY' })
      await expect(harness.rewind(sessionId, { toTurn: -1 })).rejects.toMatchObject({ code: 'INVALID_ARGS' })
      await expect(harness.rewind(sessionId, { toTurn: 1, files: false, conversation: false })).rejects.toMatchObject({ code: 'INVALID_ARGS' })
      expect(snapshot(root)).toEqual(before)
      await harness.close()
    })
  })
}
