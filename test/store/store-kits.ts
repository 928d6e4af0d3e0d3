import { mkdtempSync, rmSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryStore, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { createScratchDatabase, type ScratchDatabase } from './postgres-scratch.js'

/** A store under test, with a way to open a second, independent instance over the same storage. */
export interface StoreKit {
  readonly store: SessionStore
  /** Another instance over the same storage (for memory: the same instance — there is nothing else). */
  another(): SessionStore
  /** Whether `another()` is a truly separate instance (durability across instances is meaningful). */
  readonly durable: boolean
  cleanup(): Promise<void>
}

/** A store kind: `make` gives a fresh kit per test; `setup`/`teardown` run once around a file's tests. */
export interface StoreKind {
  readonly name: string
  make(): StoreKit
  setup?(): Promise<void>
  teardown?(): Promise<void>
}

let scratch: ScratchDatabase | undefined
let kitNumber = 0

/** Makes kits for each store kind, in fresh temp dirs (PostgreSQL: a fresh schema of one scratch database). */
export const STORE_KINDS: readonly StoreKind[] = [
  {
    name: 'MemoryStore',
    make() {
      const store = new MemoryStore()
      return { store, another: () => store, durable: false, cleanup: () => store.close() }
    },
  },
  { name: 'JsonlStore', make: () => onDisk('ll-jsonl-', (root) => new JsonlStore({ dir: join(root, 'sessions') })) },
  { name: 'SqliteStore', make: () => onDisk('ll-sqlite-', (root) => new SqliteStore({ path: join(root, 'sessions.db') })) },
  {
    name: 'PostgresStore',
    async setup() {
      scratch = await createScratchDatabase()
    },
    async teardown() {
      await scratch?.drop()
      scratch = undefined
    },
    make() {
      const url = (scratch as ScratchDatabase).url
      const schema = `kit_${kitNumber++}`
      const opened: PostgresStore[] = []
      const another = (): PostgresStore => {
        const store = new PostgresStore({ connectionString: url, schema, leaseMs: 5000 })
        opened.push(store)
        return store
      }
      return {
        store: another(),
        another,
        durable: true,
        async cleanup() {
          await Promise.allSettled(opened.map((s) => s.close()))
        },
      }
    },
  },
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

/**
 * Registers the per-file setup/teardown of `kind` and a fresh kit per test (cleaned up after it), for use
 * inside a `describe.each(STORE_KINDS)` body; returns the current test's kit.
 */
export function useStoreKit(kind: StoreKind): () => StoreKit {
  let kit: StoreKit | undefined
  beforeAll(async () => {
    await kind.setup?.()
  })
  afterAll(async () => {
    await kind.teardown?.()
  })
  beforeEach(() => {
    kit = kind.make()
  })
  afterEach(async () => {
    await kit?.cleanup()
    kit = undefined
  })
  return () => {
    if (kit === undefined) throw new Error('useStoreKit: no kit outside a test')
    return kit
  }
}
