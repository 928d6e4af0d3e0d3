/**
 * The process the fork crash test kills: `fork-crash-child <jsonl|sqlite> <dir> <prefix>` forks session `parent`
 * of the store in `dir` over and over (children `<prefix>0`, `<prefix>1`, …), printing each child's id once
 * forkSession resolved, until it is killed.
 */
import { join } from 'node:path'
import { createHarness } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

const [kind, dir, prefix] = process.argv.slice(2) as [string, string, string]
const store = kind === 'jsonl' ? new JsonlStore({ dir: join(dir, 'sessions') }) : new SqliteStore({ path: join(dir, 'sessions.db') })
const harness = createHarness({ store })
process.stdout.write('READY\n')
for (let i = 0; ; i++) {
  const id = await harness.forkSession('parent', { childId: `${prefix}${i}` })
  process.stdout.write(`${id}\n`)
}
