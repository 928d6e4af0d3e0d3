import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { verifySessionLog } from '../../src/session/verify.js'
import { BINARY, startRewindServe, type RewindServe } from './rewind-fixture.js'

// The file-change and rewind routes of `serve` on a real workspace: a scripted session edits files over three
// turns (edit_file, a bash `sed -i` that also deletes a binary file, write_file creating a file, write_file and
// edit_file again); the routes show each turn's changes and diffs, and a rewind to turn 1 puts the exact bytes
// back, deletes what was created and answers the fork, with outside edits as conflicts that force overrides.
let f: RewindServe
let doc: { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: object }> }> }>> }
const ajv = new Ajv2020({ strict: false, allErrors: true })

beforeAll(async () => {
  f = await startRewindServe()
  doc = (await (await f.api('/api/openapi.json')).json()) as typeof doc
})
afterAll(async () => f?.close())
beforeEach(() => f.reset())

/** The answer's body, checked against the OpenAPI document's schema for its route and status. */
async function answer<T>(res: Response, method: 'get' | 'post', template: string, status: number): Promise<T> {
  expect(res.status, `${method} ${template}`).toBe(status)
  const body = (await res.json()) as T
  const schema = doc.paths[template]?.[method]?.responses[String(status)]?.content['application/json']?.schema
  expect(schema, `${method} ${template} ${status} is documented`).toBeDefined()
  const check = ajv.compile(schema as object)
  expect(check(body), `${method} ${template} ${status}: ${ajv.errorsText(check.errors)}`).toBe(true)
  return body
}

interface Diff {
  path: string
  change: string
  calls: { callId: string; tool: string }[]
  binary?: true
  added?: number
  removed?: number
  hunks?: { lines: string[] }[]
  beforeBytes?: number
  afterBytes?: number
}
interface Rewound {
  from: string
  sessionId: string
  forked: boolean
  restored: string[]
  deleted: string[]
  conflicts: { path: string; reason: string }[]
}

const lines = (file: Diff | undefined): string[] => file?.hunks?.flatMap((h) => h.lines) ?? []

describe('REWIND-API: file changes per turn', () => {
  it('lists which calls changed which paths in each turn, net over the turn', async () => {
    const id = await f.session()
    const changes = await answer<{ turns: { turn: number; files: Diff[] }[]; restores: unknown[] }>(await f.api(`/api/sessions/${id}/file-changes`), 'get', '/api/sessions/{id}/file-changes', 200)
    const summary = changes.turns.map((t) => [t.turn, t.files.map((file) => [file.path, file.change, file.calls.map((c) => `${c.tool}:${c.callId}`).join(',')])])
    expect(summary).toEqual([
      [1, [['a.txt', 'modified', 'edit_file:c1']]],
      [
        2,
        [
          ['b.txt', 'modified', 'bash:c2a'],
          ['c.bin', 'deleted', 'bash:c2a'],
          ['sub/new.txt', 'created', 'write_file:c2b'],
        ],
      ],
      [
        3,
        [
          ['a.txt', 'modified', 'write_file:c3a'],
          ['b.txt', 'modified', 'edit_file:c3b'],
        ],
      ],
    ])
    expect(changes.restores).toEqual([])
  })

  it("answers a turn's diffs: added and removed lines, a created and a deleted file, a binary file marked", async () => {
    const id = await f.session()
    const two = await answer<{ turn: number; files: Diff[] }>(await f.api(`/api/sessions/${id}/file-changes/2`), 'get', '/api/sessions/{id}/file-changes/{turn}', 200)
    const byPath = new Map(two.files.map((file) => [file.path, file]))
    expect(lines(byPath.get('b.txt'))).toEqual(['-bravo', '+BRAVO', ' charlie'])
    expect(byPath.get('b.txt')).toMatchObject({ added: 1, removed: 1 })
    expect(byPath.get('c.bin')).toMatchObject({ change: 'deleted', binary: true, beforeBytes: 256 })
    expect(byPath.get('c.bin')?.hunks).toBeUndefined()
    expect(byPath.get('sub/new.txt')).toMatchObject({ change: 'created', added: 2, removed: 0, afterBytes: 30 })
    expect(lines(byPath.get('sub/new.txt'))).toEqual(['+created in turn 2', '+second line'])

    const three = await answer<{ files: Diff[] }>(await f.api(`/api/sessions/${id}/file-changes/3`), 'get', '/api/sessions/{id}/file-changes/{turn}', 200)
    expect(lines(three.files.find((file) => file.path === 'a.txt'))).toEqual([' ALPHA', '+rewritten in turn 3'])
    // Over the size cap: listed, not diffed.
    const capped = await answer<{ files: Diff[] }>(await f.api(`/api/sessions/${id}/file-changes/2?maxBytes=8`), 'get', '/api/sessions/{id}/file-changes/{turn}', 200)
    expect(capped.files.find((file) => file.path === 'b.txt')).toMatchObject({ tooLarge: true, note: expect.stringMatching(/larger than 8 bytes/) })

    await answer(await f.api(`/api/sessions/${id}/file-changes/9`), 'get', '/api/sessions/{id}/file-changes/{turn}', 404)
    await answer(await f.api(`/api/sessions/${id}/file-changes/0`), 'get', '/api/sessions/{id}/file-changes/{turn}', 400)
    await answer(await f.api(`/api/sessions/${id}/file-changes/2?maxBytes=0`), 'get', '/api/sessions/{id}/file-changes/{turn}', 400)
    await answer(await f.api('/api/sessions/no-such-session/file-changes'), 'get', '/api/sessions/{id}/file-changes', 404)
  })
})

describe('REWIND-API: POST /api/sessions/:id/rewind', () => {
  it('rewinds to turn 1: the exact bytes back, the created file deleted, a fork of one turn; again changes nothing', async () => {
    let afterOne: Record<string, string | null> = {}
    const id = await f.session(['one', 'two', 'three'], (turn) => {
      if (turn === 1) afterOne = f.hashes()
    })
    expect(f.hashes()).not.toEqual(afterOne)
    const rewound = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1 }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(rewound).toMatchObject({ from: id, forked: true, toTurn: 1, restored: ['a.txt', 'b.txt', 'c.bin'], deleted: ['sub/new.txt'], conflicts: [] })
    expect(f.hashes()).toEqual(afterOne)
    expect(readFileSync(join(f.root, 'c.bin')).equals(BINARY)).toBe(true)

    const fork = (await (await f.api(`/api/sessions/${rewound.sessionId}`)).json()) as { turns: number; header: { parentSession?: string } }
    expect(fork).toMatchObject({ turns: 1, header: { parentSession: id } })
    const forkLog = await f.store.read(rewound.sessionId)
    expect(verifySessionLog(forkLog.events).problems).toEqual([])
    // The fork's page lists the rewind that started it.
    const forkChanges = (await (await f.api(`/api/sessions/${rewound.sessionId}/file-changes`)).json()) as { turns: { turn: number }[]; restores: unknown[] }
    expect(forkChanges.turns.map((t) => t.turn)).toEqual([1])
    expect(forkChanges.restores).toEqual([expect.objectContaining({ afterTurn: 1, session: id, toTurn: 1, restored: ['a.txt', 'b.txt', 'c.bin'], deleted: ['sub/new.txt'] })])
    expect(((await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns).toBe(3)

    const again = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1 }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(again).toMatchObject({ restored: [], deleted: [], conflicts: [] })
    expect(f.hashes()).toEqual(afterOne)

    // The fork goes on like any session.
    await f.post(`/api/sessions/${rewound.sessionId}/followup`, { text: 'after the rewind' })
    await f.settled(rewound.sessionId, 2)
  })

  it('leaves a file changed outside the agent as a conflict, restores the rest; force restores it too', async () => {
    let afterOne: Record<string, string | null> = {}
    const id = await f.session(['one', 'two', 'three'], (turn) => {
      if (turn === 1) afterOne = f.hashes()
    })
    writeFileSync(join(f.root, 'b.txt'), 'edited by hand\n')
    const first = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1 }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(first.restored).toEqual(['a.txt', 'c.bin'])
    expect(first.deleted).toEqual(['sub/new.txt'])
    expect(first.conflicts).toEqual([{ path: 'b.txt', reason: expect.stringMatching(/changed outside the agent/) }])
    expect(readFileSync(join(f.root, 'b.txt'), 'utf8')).toBe('edited by hand\n')

    const forced = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1, force: true }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(forced).toMatchObject({ restored: ['b.txt'], deleted: [], conflicts: [] })
    expect(forced.sessionId).not.toBe(first.sessionId)
    expect(f.hashes()).toEqual(afterOne)
  })

  it('rewinds the files only (no fork) and forks the conversation only (files left)', async () => {
    const id = await f.session(['one', 'two'])
    const afterTwo = f.hashes()
    const forkOnly = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1, files: false }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(forkOnly).toMatchObject({ forked: true, restored: [], deleted: [], conflicts: [] })
    expect(f.hashes()).toEqual(afterTwo)
    const filesOnly = await answer<Rewound>(await f.post(`/api/sessions/${id}/rewind`, { toTurn: 0, conversation: false }), 'post', '/api/sessions/{id}/rewind', 200)
    expect(filesOnly).toMatchObject({ from: id, sessionId: id, forked: false, restored: ['a.txt', 'b.txt', 'c.bin'], deleted: ['sub/new.txt'] })
    expect(readFileSync(join(f.root, 'a.txt'), 'utf8')).toBe('alpha\n')
  })

  it('refuses bad requests (400), a turn that did not end (400 INVALID_BOUNDARY), an unknown session (404), a running one (409)', async () => {
    const id = await f.session(['one'])
    const refused = async (body: unknown, status: number, code: string): Promise<string> => {
      const res = await f.api(`/api/sessions/${id}/rewind`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
      const error = await answer<{ error: { code: string; message: string } }>(res, 'post', '/api/sessions/{id}/rewind', status)
      expect(error.error.code, JSON.stringify(body)).toBe(code)
      return error.error.message
    }
    await refused({}, 400, 'INVALID_REQUEST')
    await refused({ toTurn: -1 }, 400, 'INVALID_REQUEST')
    await refused({ toTurn: '1' }, 400, 'INVALID_REQUEST')
    await refused({ toTurn: 1, force: 'yes' }, 400, 'INVALID_REQUEST')
    await refused({ toTurn: 1, sideways: true }, 400, 'INVALID_REQUEST')
    expect(await refused({ toTurn: 1, files: false, conversation: false }, 400, 'INVALID_REQUEST')).toMatch(/files, conversation or both/)
    expect(await refused({ toTurn: 4 }, 400, 'INVALID_BOUNDARY')).toBe(`session '${id}' has no ended turn 4: its turns that ended run up to 1`)
    expect(await refused({ toTurn: 0 }, 400, 'INVALID_BOUNDARY')).toMatch(/conversation: false/)
    const unknown = await f.post('/api/sessions/no-such-session/rewind', { toTurn: 1 })
    expect((await answer<{ error: { code: string } }>(unknown, 'post', '/api/sessions/{id}/rewind', 404)).error.code).toBe('SESSION_NOT_FOUND')

    await f.post(`/api/sessions/${id}/followup`, { text: 'hang on' })
    const deadline = Date.now() + 10_000
    while (((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status !== 'running') {
      if (Date.now() > deadline) throw new Error('never running')
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(await refused({ toTurn: 1 }, 409, 'OPEN_TURN')).toMatch(/running a turn/)
    await f.post(`/api/sessions/${id}/cancel`)
    await f.settled(id, 2)
  })

  it('refuses a stored session another writer holds open (409 SESSION_LOCKED), and leaves its files', async () => {
    const id = await f.session(['one', 'two'])
    const { header, events } = await f.store.read(id)
    // A copy of it, held open by a second store over the same folder, as a CLI chat would hold it.
    const other = new JsonlStore({ dir: f.dir })
    const writer = await other.create({ ...header, id: `held-${id}` }, events)
    try {
      const before = f.hashes()
      const res = await f.post(`/api/sessions/held-${id}/rewind`, { toTurn: 1 })
      expect((await answer<{ error: { code: string } }>(res, 'post', '/api/sessions/{id}/rewind', 409)).error.code).toBe('SESSION_LOCKED')
      expect(f.hashes()).toEqual(before)
    } finally {
      await writer.close()
      await other.close()
    }
    // Released: the same request rewinds it.
    await answer<Rewound>(await f.post(`/api/sessions/held-${id}/rewind`, { toTurn: 1 }), 'post', '/api/sessions/{id}/rewind', 200)
  })
})

describe('REWIND-API on SQLite', () => {
  it('rewinds to turn 1 with the checkpoints in the database: exact bytes back, a conflict left, force restores it', async () => {
    const g = await startRewindServe((dir) => new SqliteStore({ path: join(dir, 'sessions.db') }))
    try {
      let afterOne: Record<string, string | null> = {}
      const id = await g.session(['one', 'two', 'three'], (turn) => {
        if (turn === 1) afterOne = g.hashes()
      })
      const two = (await (await g.api(`/api/sessions/${id}/file-changes/2`)).json()) as { files: Diff[] }
      expect(lines(two.files.find((file) => file.path === 'b.txt'))).toEqual(['-bravo', '+BRAVO', ' charlie'])
      writeFileSync(join(g.root, 'a.txt'), 'by hand\n')
      const first = (await (await g.post(`/api/sessions/${id}/rewind`, { toTurn: 1 })).json()) as Rewound
      expect(first).toMatchObject({ restored: ['b.txt', 'c.bin'], deleted: ['sub/new.txt'], conflicts: [{ path: 'a.txt' }] })
      const forced = (await (await g.post(`/api/sessions/${id}/rewind`, { toTurn: 1, force: true })).json()) as Rewound
      expect(forced).toMatchObject({ restored: ['a.txt'], deleted: [], conflicts: [] })
      expect(g.hashes()).toEqual(afterOne)
      expect(((await (await g.api(`/api/sessions/${forced.sessionId}`)).json()) as { turns: number }).turns).toBe(1)
    } finally {
      await g.close()
    }
  })
})
