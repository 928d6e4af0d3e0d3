// Resume checkpoints of the SQLite store (issue 30, target 2): resuming from a checkpoint and the rows after it
// gives what resuming from every row gives, for random logs and random cut points; a checkpoint that is damaged,
// stale or of another database is ignored, never trusted; without any checkpoint everything still works; a
// version-3 database is migrated to the current version (4 brought the checkpoints); a process killed right after a turn end leaves a checkpoint that
// matches its rows.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { SQLITE_SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js'
import { recordSqlite, ECHO, ID, turnSpec, type TurnSpec } from './resume-recorder.js'

const roots: string[] = []
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})
const scratch = (): string => {
  const root = mkdtempSync(join(tmpdir(), 'll-sqlite-cp-'))
  roots.push(root)
  return root
}


/** Runs `work` on the database file directly (the store closed). */
function withDb<T>(path: string, work: (db: Database.Database) => T): T {
  const db = new Database(path)
  try {
    return work(db)
  } finally {
    db.close()
  }
}

/** The session's checkpoint row as stored, or undefined. */
function checkpointOf(path: string): string | undefined {
  return withDb(path, (db) => db.prepare('SELECT checkpoint FROM resume_checkpoints WHERE session_id = ?').pluck().get(ID) as string | undefined)
}

/** A copy of the recorded database with `checkpoint` (text, or none) as the session's checkpoint row. */
function copyWith(path: string, checkpoint: string | undefined): string {
  const fresh = join(scratch(), 'sessions.db')
  // A killed writer leaves its last commits in the WAL: copied too, SQLite recovers them on open.
  copyFileSync(path, fresh)
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${fresh}-wal`)
  withDb(fresh, (db) => {
    db.prepare('DELETE FROM resume_checkpoints WHERE session_id = ?').run(ID)
    if (checkpoint !== undefined) db.prepare('INSERT INTO resume_checkpoints (session_id, checkpoint) VALUES (?, ?)').run(ID, checkpoint)
  })
  return fresh
}

/** What a resumed agent holds, and whether it resumed from a checkpoint (its log's prefix still unread). */
async function resumed(path: string): Promise<{ lazy: boolean; state: unknown }> {
  const harness = createHarness({ store: new SqliteStore({ path }), tools: [ECHO], adapters: [scriptedAdapter({ script: [], models: { m1: {} } })] })
  try {
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
    return { lazy, state: JSON.parse(JSON.stringify(state)) }
  } finally {
    await harness.close()
  }
}

describe('resume checkpoints (SQLite)', () => {
  it('resume from a checkpoint and the rows after it equals resume from every row, at random cut points', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(turnSpec, { minLength: 1, maxLength: 5 }), fc.nat(), async (turns, pick) => {
        const path = join(scratch(), 'sessions.db')
        const copies = await recordSqlite(path, turns)
        const cut = pick % copies.length
        const whole = await resumed(copyWith(path, undefined))
        const fromCheckpoint = await resumed(copyWith(path, copies[cut]))
        expect(whole.lazy).toBe(false)
        expect(fromCheckpoint.lazy).toBe(true)
        expect(fromCheckpoint.state).toEqual(whole.state)
      }),
      { numRuns: 12 },
    )
  }, 120_000)

  it('a checkpoint damaged anywhere is ignored, and the session resumes as from every row', async () => {
    const path = join(scratch(), 'sessions.db')
    const copies = await recordSqlite(path, [
      { text: 12, reasoning: 2, tool: true, steer: false },
      { text: 30, reasoning: 0, tool: false, steer: true },
      { text: 5, reasoning: 1, tool: true, steer: false },
    ])
    const whole = await resumed(copyWith(path, undefined))
    const text = copies[1] as string
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: text.length - 1 }), fc.integer({ min: 0x20, max: 0x7e }), async (at, code) => {
        fc.pre(text.charCodeAt(at) !== code)
        const got = await resumed(copyWith(path, text.slice(0, at) + String.fromCharCode(code) + text.slice(at + 1)))
        expect(got.lazy).toBe(false)
        expect(got.state).toEqual(whole.state)
      }),
      { numRuns: 15 },
    )
  }, 120_000)

  it('a stale checkpoint (of another database with the same id, its anchor row changed, or past the rows) is ignored', async () => {
    const spec: TurnSpec[] = [
      { text: 8, reasoning: 1, tool: false, steer: false },
      { text: 8, reasoning: 1, tool: true, steer: false },
    ]
    const a = join(scratch(), 'sessions.db')
    const b = join(scratch(), 'sessions.db')
    const fromA = await recordSqlite(a, spec)
    await new Promise((resolve) => setTimeout(resolve, 5)) // another createdAt, so another header
    await recordSqlite(b, spec)
    // Another session under the same id: its header does not match.
    const other = await resumed(copyWith(b, fromA[1]))
    expect(other.lazy).toBe(false)
    expect(other.state).toEqual((await resumed(copyWith(b, undefined))).state)
    // The anchor row (the first turn's end) rewritten: the checkpoint no longer describes it.
    const anchor = JSON.parse((fromA[0] as string).split('\n')[1] as string) as { anchor: { at: number } }
    const edited = copyWith(a, fromA[0])
    withDb(edited, (db) => db.prepare(`UPDATE events SET line = replace(line, '"time":', '"time": ') WHERE session_id = ? AND seq = ?`).run(ID, anchor.anchor.at))
    const reference = copyWith(edited, undefined)
    const got = await resumed(edited)
    expect(got.lazy).toBe(false)
    expect(got.state).toEqual((await resumed(reference)).state)
    // The rows cut before the last checkpoint's anchor (and the counter with them): nothing there to anchor to.
    const last = JSON.parse((fromA[1] as string).split('\n')[1] as string) as { anchor: { at: number } }
    const cut = copyWith(a, fromA[1])
    withDb(cut, (db) => {
      db.prepare('DELETE FROM events WHERE session_id = ? AND seq > ?').run(ID, anchor.anchor.at)
      db.prepare('UPDATE sessions SET next_seq = ? WHERE id = ?').run(anchor.anchor.at + 1, ID)
    })
    expect(last.anchor.at).toBeGreaterThan(anchor.anchor.at)
    const cutReference = copyWith(cut, undefined)
    const fromCut = await resumed(cut)
    expect(fromCut.lazy).toBe(false)
    expect(fromCut.state).toEqual((await resumed(cutReference)).state)
  }, 60_000)

  it('prefix rows changed behind a matching checkpoint, so that they fold to something else, are found when the prefix is read', async () => {
    const path = join(scratch(), 'sessions.db')
    const copies = await recordSqlite(path, [
      { text: 4, reasoning: 0, tool: false, steer: false },
      { text: 4, reasoning: 0, tool: false, steer: false },
    ])
    const edited = copyWith(path, copies[1])
    // The request headers the checkpoint keeps (the latest one) now say another model than the rows.
    const changed = withDb(edited, (db) => db.prepare(`UPDATE events SET line = replace(line, '"m1"', '"m9"') WHERE session_id = ? AND line LIKE '{"type":"request/header"%'`).run(ID).changes)
    expect(changed).toBeGreaterThan(0)
    await expect(resumed(edited)).rejects.toMatchObject({ code: 'SESSION_CORRUPT', message: expect.stringContaining('no longer fold to what its resume checkpoint recorded') })
  }, 60_000)

  it('the writer keeps the checkpoint in the database, and with it deleted the session still resumes, goes on, and gets one again', async () => {
    const path = join(scratch(), 'sessions.db')
    await recordSqlite(path, [{ text: 3, reasoning: 0, tool: false, steer: false }])
    expect(checkpointOf(path)).toBeDefined()
    withDb(path, (db) => db.prepare('DELETE FROM resume_checkpoints').run())
    const got = await resumed(path)
    expect(got.lazy).toBe(false)
    // The full open wrote a checkpoint for the next one.
    expect(checkpointOf(path)).toBeDefined()
    expect((await resumed(path)).lazy).toBe(true)
    // And the session goes on from the checkpoint: a new turn, then resumed again from the newer checkpoint.
    await recordSqlite(path, [{ text: 2, reasoning: 0, tool: true, steer: false }], true)
    const again = await resumed(path)
    expect(again.lazy).toBe(true)
    expect(again.state).toEqual((await resumed(copyWith(path, undefined))).state)
  }, 60_000)

  it('a version-3 database (no checkpoint table) is migrated to the current version on open, and its sessions resume and get a checkpoint', async () => {
    const path = join(scratch(), 'sessions.db')
    await recordSqlite(path, [{ text: 5, reasoning: 1, tool: true, steer: true }])
    const reference = await resumed(copyWith(path, undefined))
    withDb(path, (db) => db.exec('DROP TABLE resume_checkpoints; PRAGMA user_version = 3'))
    const got = await resumed(path)
    expect(got.lazy).toBe(false)
    expect(got.state).toEqual(reference.state)
    withDb(path, (db) => expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION))
    expect(checkpointOf(path)).toBeDefined()
    expect((await resumed(path)).lazy).toBe(true)
  }, 60_000)

  it('a process killed right after a turn end leaves a checkpoint of that turn end (one transaction with its rows)', async () => {
    const path = join(scratch(), 'sessions.db')
    const child = join(import.meta.dirname, 'sqlite-resume-kill-child.ts')
    let status: number | null = 0
    try {
      execFileSync(process.execPath, ['--import', 'tsx', child, path, '3'], { stdio: 'pipe', timeout: 60_000 })
    } catch (error) {
      status = (error as { status: number | null; signal?: string }).signal === 'SIGKILL' ? null : 1
    }
    expect(status).toBeNull()
    expect(existsSync(path)).toBe(true)
    const checkpoint = JSON.parse((checkpointOf(path) as string).split('\n')[1] as string) as { fold: { lastTurn: number } }
    expect(checkpoint.fold.lastTurn).toBe(3)
    const reference = await resumed(copyWith(path, undefined))
    const got = await resumed(path)
    expect(got.lazy).toBe(true)
    expect(got.state).toEqual(reference.state)
  }, 90_000)
})
