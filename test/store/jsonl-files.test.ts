import { spawnSync } from 'node:child_process'
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { closerEvents, createHarness, scriptedAdapter, Session, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { defaultSessionsDir } from '../../src/store/stored-log.js'

let root: string
let dir: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-files-'))
  dir = join(root, 'sessions')
})
afterEach(() => {
  rmSync(root, { recursive: true, force: true })
})

/** Runs one scripted turn (5 text chunks: one packed row) into a JSONL session and returns its file. */
async function recordedSession(id = 's'): Promise<{ path: string; events: readonly SessionEvent[] }> {
  const store = new JsonlStore({ dir })
  const model = scriptedAdapter({ script: [{ text: ['a', 'b', 'c', 'd', 'e'] }, { text: ['f', 'g', 'h'] }], models: { m1: { contextWindow: 1000 } } })
  const harness = createHarness({ store, adapters: [model] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  agent.followup('one')
  await agent.whenIdle()
  agent.followup('two')
  await agent.whenIdle()
  const events = agent.session.events
  await harness.close()
  return { path: store.pathOf(id), events }
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n')
}

async function failure(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  return promise.then(
    () => {
      throw new Error('expected a failure')
    },
    (e: { code?: string; message: string }) => e,
  )
}

describe('JSONL session files', () => {
  it('fsync: "background" makes flushes just as durable; a bad fsync option is INVALID_CONFIG', async () => {
    const store = new JsonlStore({ dir, fsync: 'background' })
    const writer = await store.create(new Session({ id: 'bg' }).header)
    writer.append({ type: 'session/title', seq: 0, time: 1, data: { title: 'background fsync' } })
    await writer.flush()
    const fresh = await new JsonlStore({ dir }).read('bg')
    expect(fresh.events.map((e) => e.data)).toEqual([{ title: 'background fsync' }])
    await store.close()
    expect(() => new JsonlStore({ dir, fsync: 'sometimes' as never })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
  })

  it("fsync: 'interval': flush() does not wait for the disk; the interval or close() writes the batch", async () => {
    const store = new JsonlStore({ dir, fsync: 'interval', flushIntervalMs: 10_000 })
    const writer = await store.create(new Session({ id: 'iv' }).header)
    const headerOnly = statSync(store.pathOf('iv')).size
    writer.append({ type: 'session/title', seq: 0, time: 1, data: { title: 'batched' } })
    await writer.flush()
    // Resolved without a write: the batch waits for the interval (10 s here), so a crash now would lose it.
    expect(statSync(store.pathOf('iv')).size).toBe(headerOnly)
    await writer.close()
    expect((await new JsonlStore({ dir }).read('iv')).events.map((e) => e.data)).toEqual([{ title: 'batched' }])
    // The interval writes on its own, without a flush or a close.
    const quick = new JsonlStore({ dir, fsync: 'interval', flushIntervalMs: 1 })
    const second = await quick.create(new Session({ id: 'iv2' }).header)
    second.append({ type: 'session/title', seq: 0, time: 1, data: { title: 'on the timer' } })
    await vi.waitFor(async () => expect((await new JsonlStore({ dir }).read('iv2')).events).toHaveLength(1), { timeout: 10_000 })
    await quick.close()
    for (const bad of [{ fsync: 'interval', flushIntervalMs: 0 }, { fsync: 'interval', flushIntervalMs: 20_000 }, { fsync: 'tool', flushIntervalMs: 100 }] as const) {
      expect(() => new JsonlStore({ dir, ...bad })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    }
  })

  it('are written as a header line plus records, packed chunk runs included, 0600 in a 0700 directory', async () => {
    const { path, events } = await recordedSession()
    const text = lines(path)
    expect(JSON.parse(text[0] as string)).toMatchObject({ ledgerloop: 'session', version: 1, id: 's', cwd: process.cwd() })
    expect(text.filter((l) => l.includes('"text-chunks"'))).toHaveLength(2)
    expect(text.length - 2).toBeLessThan(events.length) // packing saved lines; the file ends with a newline
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    const read = await new JsonlStore({ dir }).read('s')
    expect(read.events.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)))
  })

  it('a torn last line is cut off on load, and physically truncated when opened for writing', async () => {
    const { path, events } = await recordedSession()
    const intact = statSync(path).size
    appendFileSync(path, '{"type":"turn/start","seq":')
    const read = await new JsonlStore({ dir }).read('s')
    expect(read.events).toHaveLength(events.length)
    expect(read.tailRepair).toMatchObject({ line: lines(path).length, bytes: 27 })
    expect(statSync(path).size).toBe(intact + 27) // read() never writes
    const opened = await new JsonlStore({ dir }).open('s')
    expect(statSync(path).size).toBe(intact)
    expect(opened.tailRepair?.reason).toContain('no newline')
    await opened.writer.close()
  })

  it('a garbage tail (complete lines, nothing valid after them) is cut off; the log still verifies', async () => {
    const { path, events } = await recordedSession()
    const intact = statSync(path).size
    appendFileSync(path, '\0\0\0garbage\n}{\n')
    const opened = await new JsonlStore({ dir }).open('s')
    expect(opened.events).toHaveLength(events.length)
    expect(opened.tailRepair?.reason).toContain('garbage')
    expect(statSync(path).size).toBe(intact)
    expect(verifySessionLog([...opened.events, ...closerEvents(opened.events)]).ok).toBe(true)
    await opened.writer.close()
  })

  it('a torn line inside an open turn is cut; resume then closes the turn as interrupted', async () => {
    const { path, events } = await recordedSession()
    // Drop the last turn's end (and its step/end) as a crash mid-turn would, then tear the next line.
    const text = lines(path)
    const kept = text.slice(0, text.length - 3)
    writeFileSync(path, kept.join('\n') + '\n{"type":"step', { mode: 0o600 })
    const store = new JsonlStore({ dir })
    // The session index saw turn 2 end: it witnesses that the dropped lines were committed, and loading refuses
    // the file (issue 22). Reindexing accepts the loss, which makes this the crash it imitates.
    await store.reindex()
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [] })] })
    const agent = await harness.resumeAgent('s', { interrupted: 'close' })
    expect(agent.session.length).toBe(events.length)
    expect(agent.session.events.slice(-2).map((e) => e.type)).toEqual(['step/end', 'turn/end'])
    expect(agent.session.events.at(-1)?.data).toEqual({ turn: 2, reason: { kind: 'interrupted' } })
    await harness.close()
    const stored = await new JsonlStore({ dir }).read('s')
    expect(stored.tailRepair).toBeUndefined()
    expect(verifySessionLog(stored.events).problems).toEqual([])
  })

  it('a defective line followed by valid records is corruption naming file and line, never silently dropped', async () => {
    const { path } = await recordedSession()
    const text = lines(path)
    text[4] = 'this is not json'
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    for (const load of [() => new JsonlStore({ dir }).read('s'), () => new JsonlStore({ dir }).open('s')]) {
      const error = await failure(load())
      expect(error.code).toBe('SESSION_CORRUPT')
      expect(error.message).toContain(`${path}:5`)
    }
    expect(readFileSync(path, 'utf8')).toBe(text.join('\n')) // nothing was truncated
  })

  it('a seq gap, or a damaged packed row, is corruption with its line', async () => {
    const { path } = await recordedSession()
    const text = lines(path)
    const rowLine = text.findIndex((l) => l.includes('"text-chunks"'))
    const damaged = [...text]
    damaged[rowLine] = (damaged[rowLine] as string).replace('"dt":[', '"dt":[1,')
    writeFileSync(path, damaged.join('\n'), { mode: 0o600 })
    let error = await failure(new JsonlStore({ dir }).read('s'))
    expect(error).toMatchObject({ code: 'SESSION_CORRUPT', message: expect.stringContaining(`${path}:${rowLine + 1}: a packed chunk row`) })
    const gapped = [...text]
    gapped.splice(3, 1)
    writeFileSync(path, gapped.join('\n'), { mode: 0o600 })
    error = await failure(new JsonlStore({ dir }).read('s'))
    expect(error).toMatchObject({ code: 'SESSION_CORRUPT', message: expect.stringMatching(/:4: seq 3 where 2 was expected/) })
  })

  it('a header of another format version is refused with SESSION_VERSION', async () => {
    const { path } = await recordedSession()
    const text = lines(path)
    text[0] = (text[0] as string).replace('"version":1', '"version":7')
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    const error = await failure(new JsonlStore({ dir }).open('s'))
    expect(error.code).toBe('SESSION_VERSION')
    expect(error.message).toMatch(/:1: session format version 7 is not supported; this build of ledgerloop reads version 1/)
  })

  it('an unknown event type not marked ignorable is refused with the Session error, file and line', async () => {
    const { path } = await recordedSession()
    const text = lines(path)
    // Not a turn boundary: replacing one would break the log grammar (and the index's count of ended turns).
    const at = text.findIndex((l) => l.includes('"type":"request/context"'))
    const event = JSON.parse(text[at] as string) as { type: string }
    text[at] = JSON.stringify({ ...event, type: 'future/thing' })
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    // Hand-made logs: without the index there is no content witness to refuse the edits themselves.
    rmSync(join(dir, '.index'), { recursive: true, force: true })
    const error = await failure(new JsonlStore({ dir }).read('s'))
    expect(error.code).toBe('SESSION_CORRUPT')
    expect(error.message).toContain(`${path}:${at + 1}: session log is corrupt at seq`)
    expect(error.message).toContain("unknown event type 'future/thing' is not marked ignorable")
    // Marked ignorable, the same event loads; a store told about the type accepts it unmarked.
    text[at] = JSON.stringify({ ...event, type: 'future/thing', ignorable: true })
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    expect((await new JsonlStore({ dir }).read('s')).events.some((e) => e.type === 'future/thing')).toBe(true)
    text[at] = JSON.stringify({ ...event, type: 'future/thing' })
    writeFileSync(path, text.join('\n'), { mode: 0o600 })
    expect((await new JsonlStore({ dir, knownTypes: ['future/thing'] }).read('s')).events.some((e) => e.type === 'future/thing')).toBe(true)
  })

  it('a session file others can read, one that is a symlink, or a directory others can write, is refused', async () => {
    const { path } = await recordedSession()
    chmodSync(path, 0o644)
    const error = await failure(new JsonlStore({ dir }).read('s'))
    expect(error).toMatchObject({ code: 'SESSION_PERMISSIONS', message: expect.stringContaining('mode 0644') })
    expect((await failure(new JsonlStore({ dir }).open('s'))).code).toBe('SESSION_PERMISSIONS')
    chmodSync(path, 0o600)
    symlinkSync(path, join(dir, 'link.jsonl'))
    expect((await failure(new JsonlStore({ dir }).read('link'))).code).toBe('SESSION_PERMISSIONS')
    const shared = join(root, 'shared')
    mkdirSync(shared, { mode: 0o777 })
    chmodSync(shared, 0o777)
    const header = new Session({ id: 'x' }).header
    expect((await failure(new JsonlStore({ dir: shared }).create(header))).code).toBe('SESSION_PERMISSIONS')
  })

  it('a stale lock of a dead process on this host is taken over; a lock held on another host is not', async () => {
    await recordedSession()
    const dead = spawnSync(process.execPath, ['-e', '']).pid as number
    const lockPath = join(dir, 's.lock')
    writeFileSync(lockPath, JSON.stringify({ pid: dead, hostname: hostname(), startedAt: Date.now() - 1000, token: 't' }))
    const opened = await new JsonlStore({ dir }).open('s')
    expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({ pid: process.pid })
    await opened.writer.close()
    writeFileSync(lockPath, JSON.stringify({ pid: 1234, hostname: 'elsewhere.example', startedAt: 0, token: 't' }))
    const error = await failure(new JsonlStore({ dir }).open('s'))
    expect(error).toMatchObject({ code: 'SESSION_LOCKED', message: expect.stringContaining('process 1234 on elsewhere.example') })
  })

  it('list() reads headers and stat only, and reports an unreadable header instead of hiding the session', async () => {
    await recordedSession('a')
    writeFileSync(join(dir, 'broken.jsonl'), 'nope\n', { mode: 0o600 })
    const list = await new JsonlStore({ dir }).list()
    expect(list.map((s) => s.id).sort()).toEqual(['a', 'broken'])
    expect(list.find((s) => s.id === 'a')).toMatchObject({ sizeBytes: statSync(join(dir, 'a.jsonl')).size })
    expect(list.find((s) => s.id === 'broken')?.problem).toContain('not JSON')
    expect(await new JsonlStore({ dir: join(root, 'none') }).list()).toEqual([])
  })

  it('a turn costs a handful of fsyncs, not one per event', async () => {
    const probe = await open(join(root, 'probe'), 'w')
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> }
    await probe.close()
    const syncs = vi.spyOn(proto, 'sync')
    try {
      const { events } = await recordedSession()
      // create (the file's sync and the directory's) and, per turn, the flush at turn/end (the timer may add
      // one while streaming): two turns of 15+ events each.
      expect(syncs.mock.calls.length).toBeLessThanOrEqual(6)
      expect(events.length).toBeGreaterThan(30)
    } finally {
      syncs.mockRestore()
    }
  })

  it('defaultSessionsDir() is $LEDGERLOOP_HOME/sessions, default ~/.ledgerloop/sessions', () => {
    expect(defaultSessionsDir({ LEDGERLOOP_HOME: '/srv/ll' })).toBe('/srv/ll/sessions')
    expect(defaultSessionsDir({})).toMatch(/\.ledgerloop\/sessions$/)
  })
})
