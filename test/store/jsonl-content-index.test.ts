// Issue 30, target 6, JSONL: the content index beside the session index (`.index/content/`) is kept by writers
// as they commit and rebuilt from the logs when it is missing, of another version, or does not cover its log.
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter } from '../../src/index.js'

let root: string
let dir: string
let contentDir: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-jsonl-content-'))
  dir = join(root, 'sessions')
  contentDir = join(dir, '.index', 'content')
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

async function write(id: string, prompts: readonly string[], answer = 'noted'): Promise<void> {
  const store = new JsonlStore({ dir })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: [answer] }) })] })
  const agent = (await store.has(id)) ? await harness.resumeAgent(id) : await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: id })
  for (const p of prompts) await agent.run(p)
  await harness.close()
}

async function grep(text: string): Promise<string[]> {
  const store = new JsonlStore({ dir })
  try {
    return (await store.list({ grep: text })).map((r) => `${r.id}:${r.match?.part}`)
  } finally {
    await store.close()
  }
}

it('writers keep a private journal and gram filter per session, holding only the searchable texts', async () => {
  await write('a', ['find the Wombat'], 'wombat found')
  expect(readdirSync(contentDir).sort()).toEqual(['a.grams', 'a.jsonl'])
  for (const f of readdirSync(contentDir)) expect(statSync(join(contentDir, f)).mode & 0o777).toBe(0o600)
  const journal = readFileSync(join(contentDir, 'a.jsonl'), 'utf8')
  expect(journal).toContain('find the Wombat')
  expect(journal).toContain('wombat found')
  // The last line says how much of the log is indexed: all of it.
  expect(journal.trimEnd().split('\n').at(-1)).toBe(`{"upTo":${statSync(join(dir, 'a.jsonl')).size}}`)
  expect(await grep('WOMBAT')).toEqual(['a:prompt'])
})

it('a missing content index is rebuilt from the logs by the next search, and --reindex drops it to be rebuilt', async () => {
  await write('a', ['about Lemurs'])
  await write('b', ['about Tarsiers'])
  rmSync(contentDir, { recursive: true })
  expect(await grep('tarsier')).toEqual(['b:prompt'])
  expect(existsSync(join(contentDir, 'a.jsonl')) && existsSync(join(contentDir, 'b.grams'))).toBe(true)
  const store = new JsonlStore({ dir })
  await store.reindex()
  await store.close()
  expect(existsSync(contentDir)).toBe(false)
  expect(await grep('lemur')).toEqual(['a:prompt'])
})

it('a journal of another version, or one that does not cover its log, is rebuilt from the log', async () => {
  await write('a', ['about Pandas'])
  const journal = join(contentDir, 'a.jsonl')
  writeFileSync(journal, readFileSync(journal, 'utf8').replace('"version":1', '"version":99').replace('Pandas', 'Koalas'), { mode: 0o600 })
  expect(await grep('koalas')).toEqual([])
  expect(await grep('pandas')).toEqual(['a:prompt'])
  expect(readFileSync(journal, 'utf8')).toContain('"version":1')
  // A log that grew without its journal (a writer of an older build, a crash before the journal's append).
  const log = join(dir, 'a.jsonl')
  const line = readFileSync(log, 'utf8').split('\n').find((l) => l.startsWith('{"type":"user/message"')) as string
  appendFileSync(log, `${line.replace('about Pandas', 'about Gibbons').replace(/"seq":\d+/, '"seq":9999')}\n`)
  expect(await grep('gibbons')).toEqual(['a:prompt'])
})

it('a session reopened after its journal was lost is indexed again by its writer, old and new turns alike', async () => {
  await write('a', ['first about Ibises'])
  rmSync(contentDir, { recursive: true })
  await write('a', ['second about Herons'])
  const journal = readFileSync(join(contentDir, 'a.jsonl'), 'utf8')
  expect(journal).toContain('Ibises')
  expect(journal).toContain('Herons')
  expect(await grep('ibis')).toEqual(['a:prompt'])
  expect(await grep('herons')).toEqual(['a:prompt'])
})

it('a gram filter that rules a session out skips its journal, and a journal tail after the filter is still read', async () => {
  await write('a', ['about Quetzals'])
  await write('b', ['about Toucans'])
  // Damage b's journal text where the filter says "no": the search must not even read it.
  const journalB = join(contentDir, 'b.jsonl')
  writeFileSync(journalB, readFileSync(journalB, 'utf8').replace('about Toucans', 'about Quetzals'), { mode: 0o600 })
  expect(await grep('quetzal')).toEqual(['a:prompt'])
  // A text appended after the filter's last write (its writer died before the turn end) is found all the same.
  const log = join(dir, 'b.jsonl')
  const size = statSync(log).size
  appendFileSync(journalB, `${JSON.stringify({ seq: 1, part: 'answer', text: 'late Hornbills' })}\n{"upTo":${size}}\n`)
  expect(await grep('hornbill')).toEqual(['b:answer'])
})
