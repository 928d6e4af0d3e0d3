/**
 * One of the processes of the SQLite concurrent-open test: `sqlite-opener-child <name>`. Prints `READY`, then for
 * each database path it reads on stdin opens a SqliteStore on it, lists, creates and closes a session
 * named `<name>`, closes the store, and prints `ok` or `FAIL <code> <message>` (one line per path).
 */
import { createInterface } from 'node:readline'
import { Session } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'

const name = process.argv[2] as string

async function openOnce(path: string): Promise<string> {
  try {
    const store = new SqliteStore({ path })
    try {
      await store.list()
      await (await store.create(new Session({ id: name }).header)).close()
      await store.list()
    } finally {
      await store.close()
    }
    return 'ok'
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown }
    return `FAIL ${String(e.code)} ${String(e.message).replace(/\n/g, ' ')}`
  }
}

// Paths are handled one at a time, in order: the parent sends the next round only after every child answered.
const lines = createInterface({ input: process.stdin })
let queue = Promise.resolve()
lines.on('line', (path) => {
  queue = queue.then(async () => {
    process.stdout.write(`${await openOnce(path)}\n`)
  })
})
process.stdout.write('READY\n')
