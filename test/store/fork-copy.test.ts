// The stores' fast fork (SessionStore.copyPrefix, issue 30 target 7): a fork that copies the parent's stored
// records must be the fork forkSession made before by reading the parent and re-encoding its events — the same
// events, header links and listing — and must decline (so the event-by-event path decides) wherever it cannot
// vouch for the prefix. Real files and real SQLite; random logs from the loop and random fork points.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, defineTool, scriptedAdapter, verifySessionLog, type ScriptStep, type SessionEvent, type SessionStore, type SessionSummary } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-fork-copy-'))
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

type Kind = 'jsonl' | 'sqlite'
const openStore = (kind: Kind, dir: string): JsonlStore | SqliteStore => (kind === 'jsonl' ? new JsonlStore({ dir: join(dir, 'sessions') }) : new SqliteStore({ path: join(dir, 'sessions.db') }))

/** The same store without the capability: forkSession takes the event-by-event path on it. */
function withoutCopy(store: SessionStore): SessionStore {
  return {
    create: (header, seed) => store.create(header, seed),
    open: (id) => store.open(id),
    read: (id) => store.read(id),
    has: (id) => store.has(id),
    list: (options) => store.list(options),
    close: () => store.close(),
  }
}

/** Counts the forks the store copied (not declined). */
function counting(store: JsonlStore | SqliteStore): { copied: number } {
  const counter = { copied: 0 }
  const copy = store.copyPrefix.bind(store)
  store.copyPrefix = async (...args) => {
    const id = await copy(...args)
    if (id !== undefined) counter.copied++
    return id
  }
  return counter
}

const noop = defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => 'ok' })
const words = (n: number, w: string): string[] => Array.from({ length: n }, (_, i) => `${w}${i} `)

/** A turn: its steps (a tool call makes another step follow). */
const turnArb = fc.array(fc.record({ text: fc.nat(40), reasoning: fc.nat(8), tool: fc.boolean() }), { minLength: 1, maxLength: 3 })

function scriptOf(turns: readonly { text: number; reasoning: number; tool: boolean }[][]): ScriptStep[] {
  const script: ScriptStep[] = []
  let call = 0
  for (const steps of turns) {
    steps.forEach((s, i) => {
      const last = i === steps.length - 1
      script.push({
        text: words(s.text, 'w'),
        reasoning: words(s.reasoning, 'r'),
        ...(last ? {} : { toolCalls: [{ id: `c${call++}`, name: 'noop', arguments: { n: i } }] }),
      })
    })
  }
  return script
}

/** Records session `parent` through the loop on a store of its own (closed with its harness). */
async function record(store: SessionStore, turns: readonly { text: number; reasoning: number; tool: boolean }[][]): Promise<SessionEvent[]> {
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: scriptOf(turns) })], tools: [noop] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'parent' })
  for (let t = 0; t < turns.length; t++) await agent.run(`prompt number ${t}`)
  const events = [...agent.session.events]
  await harness.close()
  return events
}

const listed = (rows: readonly SessionSummary[], id: string): object => {
  const row = rows.find((r) => r.id === id) as SessionSummary
  const { title, firstPrompt, turns, lastReason, status, quarantineReason, parentSession } = row
  return { title, firstPrompt, turns, lastReason, status, quarantineReason, parentSession }
}

/** A fork's log, with what differs between two forks by design (the end-seed's time) set aside. */
const comparable = (events: readonly SessionEvent[]): string[] => events.map((e) => JSON.stringify(e.type === 'session/end-seed' ? { ...e, time: 0 } : e))

const codeOf = async (work: Promise<unknown>): Promise<string> => work.then(() => 'ok', (e: { code?: string }) => String(e.code))

for (const kind of ['jsonl', 'sqlite'] as const) {
  describe(`${kind}: copyPrefix`, () => {
    it('a copied fork equals the event-by-event fork at every fork point of random logs (and declines inside turns)', async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(fc.array(turnArb, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), async (turns, picks) => {
          const dir = join(root, `run-${run++}`)
          const parent = await record(openStore(kind, dir), turns)
          const store = openStore(kind, dir)
          const ends = parent.flatMap((e) => (e.type === 'turn/end' ? [e.seq] : []))
          // Seqs outside every turn (before the first turn/start, and each turn/end up to the next turn/start):
          // valid fork points, so each one the fork accepts must take the copying path.
          const outside = new Set<number>()
          let inTurn = false
          for (const e of parent) {
            if (e.type === 'turn/start') inTurn = true
            if (!inTurn) outside.add(e.seq)
            if (e.type === 'turn/end') (inTurn = false), outside.add(e.seq)
          }
          // Random seqs (most inside a turn), every turn end, and the default end of the log.
          const points: (number | undefined)[] = [undefined, ...ends, ...picks.map((p) => p % parent.length)]
          const counter = counting(store)
          const fast = createHarness({ store })
          const slow = createHarness({ store: withoutCopy(store) })
          let expectedCopies = 0
          for (const [i, at] of points.entries()) {
            const options = at === undefined ? {} : { at }
            const [a, b] = [await codeOf(fast.forkSession('parent', { ...options, childId: `fast-${i}` })), await codeOf(slow.forkSession('parent', { ...options, childId: `slow-${i}` }))]
            expect(a).toBe(b)
            if (a !== 'ok') continue
            if (at === undefined || outside.has(at)) expectedCopies++
            const reader = openStore(kind, dir)
            const [copied, reread] = [await reader.read(`fast-${i}`), await reader.read(`slow-${i}`)]
            expect(comparable(copied.events)).toEqual(comparable(reread.events))
            const { id: _a, createdAt: _b, ...copiedHeader } = copied.header
            const { id: _c, createdAt: _d, ...rereadHeader } = reread.header
            expect(copiedHeader).toEqual(rereadHeader)
            expect(verifySessionLog(copied.events).ok).toBe(true)
            const rows = await reader.list()
            expect(listed(rows, `fast-${i}`)).toEqual(listed(rows, `slow-${i}`))
            await reader.close()
          }
          // Every fork outside a turn (at a turn end, before the first turn, at the end of the log) took the copying path.
          expect(counter.copied).toBe(expectedCopies)
          await fast.close()
          await slow.close()
          await store.close()
        }),
        { numRuns: 12 },
      )
    })

    it('a copied fork resumes and runs another turn, and its own fork copies again', async () => {
      await record(openStore(kind, root), [[{ text: 30, reasoning: 3, tool: true }, { text: 5, reasoning: 0, tool: false }]])
      const store = openStore(kind, root)
      const counter = counting(store)
      const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: 'more' }] })] })
      const child = await harness.forkSession('parent', { childId: 'child' })
      const agent = await harness.resumeAgent(child)
      await agent.run('again')
      await agent.dispose()
      const grandchild = await harness.forkSession('child')
      await harness.close()
      expect(counter.copied).toBe(2)
      const reader = openStore(kind, root)
      const read = await reader.read(grandchild)
      expect(read.header).toMatchObject({ parentSession: 'child', seedLength: read.events.length - 1 })
      expect(read.events.filter((e) => e.type === 'session/end-seed').map((e) => e.seq)).toHaveLength(2)
      expect(verifySessionLog(read.events).ok).toBe(true)
      await reader.close()
    })

    it('a taken child id is SESSION_EXISTS and writes nothing', async () => {
      await record(openStore(kind, root), [[{ text: 3, reasoning: 0, tool: false }]])
      const store = openStore(kind, root)
      const harness = createHarness({ store })
      expect(await codeOf(harness.forkSession('parent', { childId: 'parent' }))).toBe('SESSION_EXISTS')
      expect((await store.list()).map((s) => s.id)).toEqual(['parent'])
      await harness.close()
    })
  })
}

describe('jsonl: copyPrefix declines what the session index does not vouch for', () => {
  it('a log edited after its last write (valid JSON, same structure) is not copied: forkSession refuses it as loading does', async () => {
    await record(new JsonlStore({ dir: join(root, 'sessions') }), [[{ text: 3, reasoning: 0, tool: false }], [{ text: 3, reasoning: 0, tool: false }]])
    const path = join(root, 'sessions', 'parent.jsonl')
    writeFileSync(path, readFileSync(path, 'utf8').replace('prompt number 1', 'prompt number X'))
    const reopened = new JsonlStore({ dir: join(root, 'sessions') })
    const counter = counting(reopened)
    const harness = createHarness({ store: reopened })
    expect(await codeOf(harness.forkSession('parent'))).toBe('SESSION_CORRUPT')
    expect(counter.copied).toBe(0)
    await harness.close()
  })

  it('without an index entry the fork is made event by event, the same child', async () => {
    const parent = await record(new JsonlStore({ dir: join(root, 'sessions') }), [[{ text: 4, reasoning: 1, tool: false }]])
    rmSync(join(root, 'sessions', '.index'), { recursive: true, force: true })
    const reopened = new JsonlStore({ dir: join(root, 'sessions') })
    const counter = counting(reopened)
    const harness = createHarness({ store: reopened })
    const id = await harness.forkSession('parent')
    expect(counter.copied).toBe(0)
    expect((await reopened.read(id)).events.slice(0, parent.length)).toEqual(parent)
    await harness.close()
  })
})
