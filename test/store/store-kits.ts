import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryStore, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

/** A store under test, with a way to open a second, independent instance over the same storage. */
export interface StoreKit {
  readonly store: SessionStore
  /** Another instance over the same storage (for memory: the same instance — there is nothing else). */
  another(): SessionStore
  /** Whether `another()` is a truly separate instance (durability across instances is meaningful). */
  readonly durable: boolean
  cleanup(): Promise<void>
}

/** Makes kits for each store kind, in fresh temp dirs. */
export const STORE_KINDS: readonly { readonly name: string; make(): StoreKit }[] = [
  {
    name: 'MemoryStore',
    make() {
      const store = new MemoryStore()
      return { store, another: () => store, durable: false, cleanup: () => store.close() }
    },
  },
  { name: 'JsonlStore', make: () => onDisk('ll-jsonl-', (root) => new JsonlStore({ dir: join(root, 'sessions') })) },
  { name: 'SqliteStore', make: () => onDisk('ll-sqlite-', (root) => new SqliteStore({ path: join(root, 'sessions.db') })) },
]

/** A kit over a fresh temp dir: every instance `open` makes is closed, and the dir removed, on cleanup. */
function onDisk(prefix: string, open: (root: string) => SessionStore): StoreKit {
  const root = mkdtempSync(join(tmpdir(), prefix))
  const opened: SessionStore[] = []
  const another = (): SessionStore => {
    const store = open(root)
    opened.push(store)
    return store
  }
  return {
    store: another(),
    another,
    durable: true,
    async cleanup() {
      await Promise.allSettled(opened.map((s) => s.close()))
      rmSync(root, { recursive: true, force: true })
    },
  }
}
