import { spawn } from 'node:child_process'
import { appendFileSync, chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { summarizeSessionFile } from '../../src/store/session-digest.js'
import { SessionIndex } from '../../src/store/jsonl/session-index.js'
import { bundleTestChild } from '../support/child-process-kit.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'll-index-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshDir = (): string => join(root, `d${n++}`)

/** Runs one turn with `prompt` in session `id` of `store`. */
async function turn(store: JsonlStore, id: string, prompt: string): Promise<void> {
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['ok'] }) })] })
  const options = { provider: 'scripted', model: 'm' }
  const agent = (await store.has(id)) ? await harness.resumeAgent(id, options) : await harness.createAgent({ ...options, sessionId: id })
  agent.followup(prompt)
  await agent.whenIdle()
  await agent.dispose()
}

const rows = (list: { id: string; title?: string; turns?: number; lastReason?: string | null }[]) => list.map((s) => [s.id, s.title, s.turns, s.lastReason])

it('the session index follows create, turn end, fork and a deleted log; list pages and searches it', async () => {
  const dir = freshDir()
  const store = new JsonlStore({ dir })
  await turn(store, 'a', 'fix the parser')
  await turn(store, 'b', 'write the docs')
  const list = await store.list()
  // Answered from the index the writers kept, not from a rebuild.
  expect(list.indexNote).toBeUndefined()
  expect(rows(list)).toEqual([
    ['b', 'write the docs', 1, 'completed'],
    ['a', 'fix the parser', 1, 'completed'],
  ])
  expect(list.total).toBe(2)
  expect(list[0]?.firstPrompt).toBe('write the docs')
  expect(readFileSync(store.indexPath, 'utf8')).toContain('"firstPrompt":"fix the parser"')

  await turn(store, 'a', 'and the lexer')
  expect(rows(await store.list({ limit: 1 }))).toEqual([['a', 'fix the parser', 2, 'completed']])

  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['ok'] }) })] })
  await harness.forkSession('b', { childId: 'c' })
  const forked = await store.list()
  expect(forked.indexNote).toBeUndefined()
  expect(forked.map((s) => s.id)).toEqual(['c', 'a', 'b'])
  expect(forked[0]).toMatchObject({ parentSession: 'b', title: 'write the docs', turns: 1 })
  expect((await store.list({ offset: 1, limit: 1 })).map((s) => s.id)).toEqual(['a'])
  expect((await store.list({ offset: 1, limit: 1 })).total).toBe(3)
  const found = await store.list({ search: 'DOCS' })
  expect(found.map((s) => s.id)).toEqual(['c', 'b'])
  expect(found.total).toBe(2)
  expect((await store.list({ search: 'and the' })).map((s) => s.id)).toEqual([])

  unlinkSync(join(dir, 'a.jsonl'))
  const afterDelete = await store.list()
  expect(afterDelete.map((s) => s.id)).toEqual(['c', 'b'])
  expect(afterDelete.indexNote).toMatch(/stale \(0 sessions not in it, 1 gone\)/)
  expect((await store.list()).indexNote).toBeUndefined()
  await store.close()
}, 60_000)

it('the index is rebuilt with a note when missing, damaged or stale; a log newer than its entry is read again', async () => {
  const dir = freshDir()
  const store = new JsonlStore({ dir })
  await turn(store, 'a', 'first prompt')
  await turn(store, 'b', 'second prompt')
  const expected = [
    ['b', 'second prompt', 1, 'completed'],
    ['a', 'first prompt', 1, 'completed'],
  ]

  rmSync(dirname(store.indexPath), { recursive: true })
  const missing = await store.list()
  expect(missing.indexNote).toMatch(/was missing: rebuilt from 2 session files/)
  expect(rows(missing)).toEqual(expected)
  expect((await store.list()).indexNote).toBeUndefined()

  writeFileSync(store.indexPath, 'not an index\n')
  const damaged = await store.list()
  expect(damaged.indexNote).toMatch(/was damaged/)
  expect(rows(damaged)).toEqual(expected)

  // A log that reached the folder without the index (another tool, a copy by hand).
  const other = new JsonlStore({ dir: freshDir() })
  await turn(other, 'z', 'copied in')
  await other.close()
  copyFileSync(other.pathOf('z'), join(dir, 'z.jsonl'))
  chmodSync(join(dir, 'z.jsonl'), 0o600)
  const stale = await store.list()
  expect(stale.indexNote).toMatch(/stale \(1 session not in it, 0 gone\)/)
  expect(stale.map((s) => s.id)).toContain('z')
  expect(stale.find((s) => s.id === 'z')?.title).toBe('copied in')

  // A log written after its entry (a writer killed before its turn end was indexed): summarised again.
  const events = (await store.read('a')).events
  const last = events[events.length - 1]
  expect(last?.type).toBe('turn/end')
  appendFileSync(store.pathOf('a'), JSON.stringify({ ...last, seq: events.length, time: Date.now() }) + '\n')
  const later = (Date.now() + 60_000) / 1000
  utimesSync(store.pathOf('a'), later, later)
  const fresh = await store.list()
  expect(fresh[0]).toMatchObject({ id: 'a', turns: 2, sizeBytes: statSync(store.pathOf('a')).size })
  await store.close()
}, 60_000)

it('two processes writing different sessions at once lose no index entries, while a third folds the journal', async () => {
  const dir = freshDir()
  const store = new JsonlStore({ dir })
  await turn(store, 'first', 'made before the children') // the index exists before they start
  const script = await bundleTestChild(join(here, 'index-writer-child.ts'), root)
  const run = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [script, dir, prefix, '25'], { stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      child.stderr.on('data', (d: Buffer) => (out += d.toString()))
      child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child ${prefix} exited ${code}: ${out}`))))
    })
  // A lister with a tiny journal limit folds the journal into new snapshots again and again while they write.
  const lister = new SessionIndex(dir, (id) => summarizeSessionFile(dir, id), 2000)
  let done = false
  let listings = 0
  const listing = (async () => {
    while (!done) {
      lister.list({ limit: 5 })
      listings++
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  })()
  const outs = await Promise.all([run('p'), run('q')]).finally(() => (done = true))
  await listing
  lister.close()
  expect(listings).toBeGreaterThan(3)
  expect(outs.every((o) => o.includes('DONE'))).toBe(true)
  const list = await store.list()
  expect(list.indexNote).toBeUndefined()
  expect(list.total).toBe(51)
  expect(new Set(list.map((s) => s.id)).size).toBe(51)
  expect((await store.list({ limit: 5 })).total).toBe(51) // counted from the index's header and journal
  for (const s of list) expect(s.title).toBe(s.id === 'first' ? 'made before the children' : `prompt ${s.id}`)
  await store.close()
}, 120_000)

it('a journal folded into a new snapshot keeps an append that landed in the replaced file', async () => {
  const dir = freshDir()
  const store = new JsonlStore({ dir })
  for (const id of ['a', 'b', 'c']) await turn(store, id, `prompt ${id}`)
  await store.close()
  const summarize = (id: string) => ({ id, createdAt: 0, updatedAt: statSync(join(dir, `${id}.jsonl`)).mtimeMs })
  const lister = new SessionIndex(dir, summarize, 200)
  const writer = new SessionIndex(dir, summarize)
  const now = Date.now() + 10_000
  writer.record({ id: 'a', createdAt: 1, updatedAt: now, title: 'before' }) // the writer's fd is on the current file
  expect(lister.list().map((s) => s.id)[0]).toBe('a') // the journal is past 200 bytes: this listing compacts
  writer.record({ id: 'b', createdAt: 1, updatedAt: now + 1, title: 'after the fold' })
  writer.close()
  const listed = lister.list()
  expect(listed.map((s) => [s.id, s.title])).toEqual([
    ['b', 'after the fold'],
    ['a', 'before'],
    ['c', 'prompt c'],
  ])
  expect(readFileSync(join(dir, '.index', 'sessions.jsonl'), 'utf8').split('\n')[0]).toContain('"count":3')
  lister.close()
})
