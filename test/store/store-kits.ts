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
  {
    name: 'JsonlStore',
    make() {
      const root = mkdtempSync(join(tmpdir(), 'll-jsonl-'))
      const dir = join(root, 'sessions')
      const opened: SessionStore[] = []
      const open = (): SessionStore => {
        const store = new JsonlStore({ dir })
        opened.push(store)
        return store
      }
      return {
        store: open(),
        another: open,
        durable: true,
        async cleanup() {
          await Promise.allSettled(opened.map((s) => s.close()))
          rmSync(root, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'SqliteStore',
    make() {
      const root = mkdtempSync(join(tmpdir(), 'll-sqlite-'))
      const path = join(root, 'sessions.db')
      const opened: SessionStore[] = []
      const open = (): SessionStore => {
        const store = new SqliteStore({ path })
        opened.push(store)
        return store
      }
      return {
        store: open(),
        another: open,
        durable: true,
        async cleanup() {
          await Promise.allSettled(opened.map((s) => s.close()))
          rmSync(root, { recursive: true, force: true })
        },
      }
    },
  },
]
