import { closeSync, copyFileSync, openSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { beforeAll, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { cliEnv, ensureBuilt, runCli, tempHome, type CliRun } from './cli-process.js'

// Issue 22 items 4 and 5: a damaged SQLite database, and one whose session counter disagrees with its rows, are
// refused by every command with one line naming SESSION_CORRUPT and the file: no stack trace, exit 1.

beforeAll(() => ensureBuilt(), 120_000)

const home = tempHome()
const env = cliEnv(home)
const good = join(home, 'good.db')
const script = join(home, 'script.json')
const PAGE = 4096
let sessionId = ''

beforeAll(async () => {
  writeFileSync(script, JSON.stringify([{ text: ['resumed ', 'and ', 'answered.'] }]))
  // Turns with long answers, so that the events fill many pages after the sessions table's few.
  const harness = createHarness({ store: new SqliteStore({ path: good }), adapters: [scriptedAdapter({ script: () => ({ text: ['x'.repeat(3000), ' done'] }) })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  sessionId = agent.id
  for (let turn = 0; turn < 12; turn++) {
    agent.followup(`turn ${turn}`)
    await agent.whenIdle()
  }
  await harness.close()
}, 60_000)

/** The pages of a table or index (of one kind: leaf, internal, overflow), as SQLite's dbstat table lists them. */
function pagesOf(path: string, table: string, kind = '%'): number[] {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare('SELECT pageno FROM dbstat WHERE name = ? AND pagetype LIKE ? ORDER BY pageno').all(table, kind) as { pageno: number }[]).map((r) => r.pageno)
  } finally {
    db.close()
  }
}

function overwrite(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+')
  try {
    writeSync(fd, bytes, 0, bytes.length, offset)
  } finally {
    closeSync(fd)
  }
}

/** Overwrites whole pages (numbered from 1, as SQLite does) with a byte pattern. */
function overwritePages(path: string, pages: readonly number[]): void {
  for (const page of pages) overwrite(path, (page - 1) * PAGE, Buffer.alloc(PAGE, 0x5a))
}

type Damage = (path: string) => void

const DAMAGE: Record<string, Damage> = {
  'a garbage header': (path) => overwrite(path, 0, Buffer.from('this is no SQLite header, only some garbage!')),
  'a file cut after its third page': (path) => truncateSync(path, 3 * PAGE),
  "the sessions table's pages overwritten": (path) => overwritePages(path, [...pagesOf(path, 'sessions'), ...pagesOf(path, 'sessions_by_update')]),
  // Leaf pages: b-tree pages that SQLite finds malformed (a damaged overflow page reads as a damaged line).
  'event pages in the middle of the file overwritten': (path) => {
    const events = pagesOf(path, 'events', 'leaf')
    const middle = Math.floor(events.length / 2)
    overwritePages(path, events.slice(middle - 1, middle + 1))
  },
}

/** A fresh copy of the good database with `damage` done to it. */
function damaged(name: string, damage: Damage): string {
  const path = join(home, `${name.replace(/\W+/g, '-')}-${Math.random().toString(36).slice(2)}.db`)
  copyFileSync(good, path)
  damage(path)
  return path
}

const COMMANDS: Record<string, (id: string) => string[]> = {
  sessions: () => ['sessions'],
  inspect: (id) => ['inspect', id],
  verify: (id) => ['verify', id],
  'run -c': () => ['run', '-c', '--script', script, 'go on'],
}

/** One stderr line naming the code and the file, no stack frame, exit 1. */
function expectRefused(run: CliRun, path: string, detail?: RegExp): void {
  const lines = run.stderr.trimEnd().split('\n')
  expect(lines, run.stderr).toHaveLength(1)
  expect(lines[0]).toContain('SESSION_CORRUPT')
  expect(lines[0]).toContain(path)
  if (detail !== undefined) expect(lines[0]).toMatch(detail)
  expect(run.stderr).not.toMatch(/^\s+at /m)
  expect(run.code).toBe(1)
}

describe('a damaged SQLite database', () => {
  for (const [damage, apply] of Object.entries(DAMAGE)) {
    it(`${damage}: sessions, inspect, verify and run -c refuse it in one line with SESSION_CORRUPT and the path (sessions lists the others when one session's events are hit)`, async () => {
      const runs = Object.entries(COMMANDS).map(async ([command, args]) => {
        const path = damaged(damage, apply)
        const run = await runCli([...args(sessionId.slice(0, 8)), '--store', `sqlite:${path}`], { env, cwd: home })
        return { command, path, run }
      })
      for (const { command, path, run } of await Promise.all(runs)) {
        // Only one session's events are damaged: `sessions` lists the database and marks that session
        // unreadable, naming the file (the other sessions of a database stay listed).
        if (command === 'sessions' && damage.startsWith('event pages')) {
          expect(run.stdout, run.stderr).toContain(`${sessionId}  `)
          expect(run.stdout).toMatch(new RegExp(`\\(unreadable: SQLite database ${path} is damaged .*SQLITE_CORRUPT`))
          expect(run.code).toBe(0)
          continue
        }
        expectRefused(run, path)
      }
    }, 60_000)
  }
})

describe("a session whose next_seq disagrees with its rows (issue 22 item 5)", () => {
  it('verify, inspect and run -c refuse it naming the mismatch; run -c writes nothing and calls no model', async () => {
    const path = damaged('next-seq', (p) => {
      const db = new Database(p)
      db.prepare('UPDATE sessions SET next_seq = next_seq + 55').run()
      db.close()
    })
    const before = statSync(path).size
    const rows = (): { events: number; nextSeq: number } => {
      const db = new Database(path, { readonly: true })
      try {
        const events = (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n
        const nextSeq = (db.prepare('SELECT next_seq AS n FROM sessions').get() as { n: number }).n
        return { events, nextSeq }
      } finally {
        db.close()
      }
    }
    const stored = rows()
    const store = ['--store', `sqlite:${path}`]
    const mismatch = new RegExp(`next seq is ${stored.nextSeq}.*\\(${stored.nextSeq - 55} events\\)`)
    const listed = await runCli(['sessions', ...store], { env, cwd: home })
    expect(listed.stdout).toMatch(new RegExp(`${sessionId} .*\\(unreadable: ${path} .*${mismatch.source}`))
    expect(listed.code).toBe(0)
    for (const args of [COMMANDS.verify, COMMANDS.inspect, COMMANDS['run -c']] as ((id: string) => string[])[]) {
      const run = await runCli([...args(sessionId.slice(0, 8)), ...store], { env, cwd: home })
      expectRefused(run, path, mismatch)
      expect(run.stdout).not.toContain('resumed and answered')
    }
    expect(rows()).toEqual(stored)
    expect(statSync(path).size).toBe(before)
  }, 60_000)
})
