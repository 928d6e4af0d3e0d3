import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SessionIndex } from '../../src/store/jsonl/session-index.js'
import type { SessionSummary } from '../../src/store/types.js'

let root: string
let dir: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-damage-'))
  dir = join(root, 'sessions')
})
afterEach(() => {
  rmSync(root, { recursive: true, force: true })
})

/** Two scripted turns (text chunks, one tool call) into a JSONL session; returns its file. */
async function recordedSession(id = 's'): Promise<string> {
  const store = new JsonlStore({ dir })
  const model = scriptedAdapter({ script: [{ text: ['a', 'b', 'c', 'd', 'e'] }, { text: ['f', 'g', 'h'] }], models: { m1: { contextWindow: 1000 } } })
  const harness = createHarness({ store, adapters: [model] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  agent.followup('one')
  await agent.whenIdle()
  agent.followup('two')
  await agent.whenIdle()
  await harness.close()
  return store.pathOf(id)
}

async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  return promise.then(
    () => {
      throw new Error('expected the store to refuse the log')
    },
    (e: { code?: string; message: string }) => e,
  )
}

/** read() and open() both refuse with `code` and a message matching `message`; the file is left byte for byte. */
async function refusedOnLoad(path: string, code: string, message: RegExp): Promise<void> {
  const before = readFileSync(path)
  for (const load of [() => new JsonlStore({ dir }).read('s'), () => new JsonlStore({ dir }).open('s')]) {
    const error = await refusal(load())
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
    expect(readFileSync(path).equals(before)).toBe(true)
  }
}

const linesOf = (path: string): string[] => readFileSync(path, 'utf8').split('\n')

describe('JSONL loading judges a stored log as verify does (issue 22)', () => {
  it('refuses an empty line between records, naming it, instead of calling it "not a JSON record"', async () => {
    const path = await recordedSession()
    const text = linesOf(path)
    text.splice(5, 0, '')
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', new RegExp(`${path}:6: line 6 is empty, and valid records follow it`))
  })

  it('refuses a header naming another session than its file', async () => {
    const other = await recordedSession('other')
    renameSync(other, join(dir, 's.jsonl'))
    await refusedOnLoad(join(dir, 's.jsonl'), 'SESSION_CORRUPT', /s\.jsonl:1: the header names session "other", expected 's'/)
  })

  it("refuses a chunk whose turn was edited (valid JSON, the log grammar broken), naming file and line", async () => {
    const path = await recordedSession()
    const text = linesOf(path)
    const at = text.findIndex((l) => l.includes('"type":"assistant/chunk"'))
    text[at] = (text[at] as string).replace('"turn":1', '"turn":2')
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', new RegExp(`${path}:${at + 1}: seq \\d+ \\(assistant/chunk\\): names turn 2 step 1 but turn 1 step 1 is open`))
  })

  it('refuses a message citing a chunk of another step', async () => {
    const path = await recordedSession()
    const text = linesOf(path)
    // Turn 2's message cites turn 1's first chunk.
    const firstChunk = (JSON.parse(text.find((l) => l.includes('"type":"assistant/chunk"')) as string) as { seq: number }).seq
    const at = text.findLastIndex((l) => l.includes('"type":"assistant/message"'))
    const message = JSON.parse(text[at] as string) as { sourceEventSeqs: number[] }
    text[at] = JSON.stringify({ ...message, sourceEventSeqs: [firstChunk, ...message.sourceEventSeqs.slice(1)] })
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', new RegExp(`${path}:${at + 1}: seq \\d+ \\(assistant/message\\): cites chunk ${firstChunk} of another step`))
  })

  it('refuses a byte-order mark and an empty file with what they are', async () => {
    const path = await recordedSession()
    writeFileSync(path, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(path)]), { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', /s\.jsonl:1: the file starts with a byte-order mark/)
    writeFileSync(path, '', { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', /s\.jsonl:1: the file is empty \(no header line\)/)
  })
})

describe('a log holding less than its session index says was committed (issue 22)', () => {
  it('a cut in the middle that looks like a torn tail is refused with what is missing, and not truncated', async () => {
    const path = await recordedSession()
    const whole = readFileSync(path)
    truncateSync(path, Math.floor(whole.length / 2))
    await refusedOnLoad(path, 'SESSION_CORRUPT', /committed data is missing: 2 ended turns, \d+ bytes .*This is not an incomplete last write: the file was cut or replaced/)
  })

  it('a listing does not overwrite the witness; reindexing accepts the loss, and the tail is then repaired', async () => {
    const path = await recordedSession()
    const whole = readFileSync(path)
    // Cut inside a line (the log's length varies by a few bytes with timings): the tail is then a torn line.
    let cut = Math.floor(whole.length / 2)
    while (whole[cut - 1] === 0x0a || whole[cut] === 0x0a) cut--
    truncateSync(path, cut)
    const store = new JsonlStore({ dir })
    await store.list()
    await store.list()
    await refusedOnLoad(path, 'SESSION_CORRUPT', /committed data is missing/)
    await store.reindex()
    const opened = await new JsonlStore({ dir }).open('s')
    expect(opened.tailRepair?.reason).toContain('no newline')
    await opened.writer.close()
    await store.close()
  })

  // A file's mtime comes from the kernel's coarse clock: a cut a moment after the writer's last index line can
  // carry an older mtime than that line's time. The rebuild must still take the file's word (this failed under
  // CI load before reindexing compared sizes instead of times).
  it('reindexing accepts the loss even when the cut file looks older than the index line that witnessed it', async () => {
    const path = await recordedSession()
    truncateSync(path, Math.floor(readFileSync(path).length / 2))
    const past = new Date(Date.now() - 60_000)
    utimesSync(path, past, past)
    await refusedOnLoad(path, 'SESSION_CORRUPT', /committed data is missing/)
    const store = new JsonlStore({ dir })
    await store.reindex()
    const opened = await new JsonlStore({ dir }).open('s')
    expect(opened.events.length).toBeGreaterThan(0)
    expect(opened.tailRepair).toBeDefined()
    await opened.writer.close()
    await store.close()
  })

  it('a cut at a line boundary that drops ended turns is refused too (no torn line to give it away)', async () => {
    const path = await recordedSession()
    const text = linesOf(path)
    const firstEnd = text.findIndex((l) => l.includes('"type":"turn/end"'))
    writeFileSync(path, text.slice(0, firstEnd + 1).join('\n') + '\n', { mode: 0o600 })
    await refusedOnLoad(path, 'SESSION_CORRUPT', /committed data is missing: 1 ended turn \(.* recorded \d+ bytes and 2 ended turns as committed; the file holds \d+ bytes and 1 ended turn\)/)
  })

  it('a torn tail a crash left is still cut off: the index never recorded the torn write', async () => {
    const path = await recordedSession()
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from('{"type":"turn/start","seq":')]), { mode: 0o600 })
    // A listing re-reads the grown file; what it records must not count the torn line as committed.
    await new JsonlStore({ dir }).list()
    const opened = await new JsonlStore({ dir }).open('s')
    expect(opened.tailRepair?.bytes).toBe(27)
    await opened.writer.close()
  })

  it('an index entry that counted a torn tail (as a listing by an older version did) does not turn the tail into a refusal', async () => {
    const path = await recordedSession()
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from('{"type":"turn/start","seq":')]), { mode: 0o600 })
    const index = new SessionIndex(dir, () => undefined)
    const entry = index.find('s') as SessionSummary
    index.record({ ...entry, updatedAt: entry.updatedAt + 1, sizeBytes: statSync(path).size })
    index.close()
    const opened = await new JsonlStore({ dir }).open('s')
    expect(opened.tailRepair?.bytes).toBe(27)
    await opened.writer.close()
  })
})

describe('a log whose content was edited after it was committed (issue 22)', () => {
  const editMessageText = (path: string): number => {
    const text = linesOf(path)
    const at = text.findIndex((l) => l.includes('"type":"assistant/message"'))
    // Valid JSON, every structural rule kept: only the text the model is said to have written changes.
    text[at] = (text[at] as string).replace('"text":"abcde"', '"text":"EDITED"')
    expect(text[at]).toContain('EDITED')
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    return at
  }

  it("an assistant/message's text edited: read() and open() refuse it naming the index's witness, and the file stays as it is", async () => {
    const path = await recordedSession()
    editMessageText(path)
    await refusedOnLoad(path, 'SESSION_CORRUPT', /s\.jsonl: the file is not what its writer committed: its first \d+ bytes \(lines 1-\d+\) differ from what was committed \(the session index .* recorded their SHA-256\)\..*`ledgerloop sessions --reindex`/)
  })

  it('a listing does not vouch for the edit; reindexing accepts it, and the resumed log is witnessed again', async () => {
    const path = await recordedSession()
    editMessageText(path)
    const store = new JsonlStore({ dir })
    await store.list()
    await refusedOnLoad(path, 'SESSION_CORRUPT', /the file is not what its writer committed/)
    await store.reindex()
    await store.close()
    const model = scriptedAdapter({ script: [{ text: ['x', 'y'] }], models: { m1: { contextWindow: 1000 } } })
    const harness = createHarness({ store: new JsonlStore({ dir }), adapters: [model] })
    const agent = await harness.resumeAgent('s', { provider: 'scripted', model: 'm1' })
    agent.followup('three')
    await agent.whenIdle()
    await harness.close()
    // The writer's digest went on from the accepted bytes: the next load checks (and passes) a new witness.
    expect((new SessionIndex(dir, () => undefined).find('s') as { content?: { bytes: number } }).content?.bytes).toBe(statSync(path).size)
    expect((await new JsonlStore({ dir }).read('s')).events.filter((e) => e.type === 'turn/end')).toHaveLength(3)
  })

  it("fsync 'interval' sessions, resumed after a torn tail, load as before (the witness never covers an uncommitted byte)", async () => {
    const model = scriptedAdapter({ script: [{ text: ['a', 'b'] }, { text: ['c'] }, { text: ['d'] }], models: { m1: { contextWindow: 1000 } } })
    const harness = createHarness({ store: new JsonlStore({ dir, fsync: 'interval', flushIntervalMs: 5 }), adapters: [model] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 's' })
    agent.followup('one')
    await agent.whenIdle()
    await harness.close()
    const path = join(dir, 's.jsonl')
    writeFileSync(path, Buffer.concat([readFileSync(path), Buffer.from('{"type":"turn/start","seq":')]), { mode: 0o600 })
    const again = createHarness({ store: new JsonlStore({ dir, fsync: 'interval', flushIntervalMs: 5 }), adapters: [model] })
    const resumed = await again.resumeAgent('s', { provider: 'scripted', model: 'm1' })
    resumed.followup('two')
    await resumed.whenIdle()
    await again.close()
    const loaded = await new JsonlStore({ dir }).read('s')
    expect(loaded.tailRepair).toBeUndefined()
    expect(loaded.events.filter((e) => e.type === 'turn/end')).toHaveLength(2)
  })

  it('without an index there is no witness: the edited log loads (as the size check, it needs the index)', async () => {
    const path = await recordedSession()
    editMessageText(path)
    rmSync(join(dir, '.index'), { recursive: true, force: true })
    expect((await new JsonlStore({ dir }).read('s')).events.length).toBeGreaterThan(0)
  })
})
