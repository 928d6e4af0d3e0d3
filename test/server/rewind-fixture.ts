import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { JsonlStore, scriptedAdapter, type ScriptStep, type SessionStore } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { builtinTools } from '../../src/tools/builtin/index.js'
import { createLedgerServer, type LedgerServer } from '../../src/server/index.js'
import { lastText } from './fleet-fixture.js'
import { TOKEN } from './serve-fixture.js'

// `serve` over a JSONL store with the built-in file tools on a scratch workspace, and a scripted model that
// edits files over three turns, each prompt naming its turn:
// - `one`: edit_file a.txt (alpha → ALPHA);
// - `two`: bash `sed -i` on b.txt and `rm c.bin` (a binary file deleted), write_file sub/new.txt (created);
// - `three`: write_file a.txt (rewritten), edit_file b.txt;
// - `hang`: waits until cancelled; anything else answers in text.

/** The binary file of the workspace (every byte value once). */
export const BINARY = Buffer.from(Array.from({ length: 256 }, (_, i) => i))

/** The workspace files the script touches. */
export const FILES = ['a.txt', 'b.txt', 'c.bin', 'sub/new.txt'] as const

/** The scripted model of these tests (see above). */
export function rewindScript(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  if (last?.content.at(-1)?.type === 'tool-result') return { text: 'files changed' }
  const text = lastText(request)
  if (text === 'one') return { toolCalls: [{ id: 'c1', name: 'edit_file', arguments: { path: 'a.txt', oldText: 'alpha', newText: 'ALPHA' } }] }
  if (text === 'two') {
    return {
      toolCalls: [
        { id: 'c2a', name: 'bash', arguments: { command: "sed -i 's/bravo/BRAVO/' b.txt && rm c.bin" } },
        { id: 'c2b', name: 'write_file', arguments: { path: 'sub/new.txt', content: 'created in turn 2\nsecond line\n' } },
      ],
    }
  }
  if (text === 'three') {
    return {
      toolCalls: [
        { id: 'c3a', name: 'write_file', arguments: { path: 'a.txt', content: 'ALPHA\nrewritten in turn 3\n' } },
        { id: 'c3b', name: 'edit_file', arguments: { path: 'b.txt', oldText: 'charlie', newText: 'CHARLIE' } },
      ],
    }
  }
  if (text.startsWith('hang')) return { hang: true }
  return { text: 'noted' }
}

/** A server whose sessions edit files in {@link RewindServe.root}. */
export interface RewindServe {
  readonly server: LedgerServer
  readonly base: string
  readonly store: SessionStore
  /** The store's folder. */
  readonly dir: string
  /** The workspace the file tools work in. */
  readonly root: string
  api(path: string, init?: RequestInit): Promise<Response>
  post(path: string, body?: unknown): Promise<Response>
  /** A session after `prompts` ran (default: the three editing turns), idle; `afterTurn` is called after each. */
  session(prompts?: readonly string[], afterTurn?: (turn: number) => void): Promise<string>
  /** Waits until session `id` has `turns` ended turns and is idle. */
  settled(id: string, turns: number): Promise<void>
  /** SHA-256 of each workspace file the script touches (null: absent). */
  hashes(): Record<string, string | null>
  /** Puts the workspace back to its starting files. */
  reset(): void
  close(): Promise<void>
}

/**
 * Starts the server (token {@link TOKEN}, a free port) over fresh folders; the store is a JSONL one in
 * {@link RewindServe.dir} unless `storeIn` makes another there.
 */
export async function startRewindServe(storeIn?: (dir: string) => SessionStore): Promise<RewindServe> {
  const dir = mkdtempSync(join(tmpdir(), 'll-rewind-serve-'))
  const root = mkdtempSync(join(tmpdir(), 'll-rewind-root-'))
  const store = storeIn?.(dir) ?? new JsonlStore({ dir })
  const server = await createLedgerServer({
    store,
    agents: {
      adapters: [scriptedAdapter({ script: rewindScript, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } })],
      tools: builtinTools({ root, shell: true, sandbox: 'off' }),
      defaults: { provider: 'scripted', model: 'm1' },
      permissions: false,
      cwd: root,
      pollMs: 50,
    },
    token: TOKEN,
    port: 0,
  })
  const base = await server.listen()
  const api = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) } })
  const post = (path: string, body?: unknown): Promise<Response> =>
    api(path, { method: 'POST', ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) })
  const settled = async (id: string, turns: number): Promise<void> => {
    const deadline = Date.now() + 15_000
    for (;;) {
      const s = (await (await api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }
      if (s.turns >= turns && s.status === 'idle') return
      if (Date.now() > deadline) throw new Error(`session ${id} did not reach ${turns} idle turns`)
      await new Promise((r) => setTimeout(r, 25))
    }
  }
  const reset = (): void => {
    rmSync(join(root, 'sub'), { recursive: true, force: true })
    writeFileSync(join(root, 'a.txt'), 'alpha\n')
    writeFileSync(join(root, 'b.txt'), 'bravo\ncharlie\n')
    writeFileSync(join(root, 'c.bin'), BINARY)
  }
  reset()
  return {
    server,
    base,
    store,
    dir,
    root,
    api,
    post,
    settled,
    reset,
    async session(prompts = ['one', 'two', 'three'], afterTurn) {
      const { id } = (await (await post('/api/sessions', {})).json()) as { id: string }
      for (const [n, text] of prompts.entries()) {
        await post(`/api/sessions/${id}/followup`, { text })
        await settled(id, n + 1)
        afterTurn?.(n + 1)
      }
      return id
    },
    hashes() {
      const of = (name: string): string | null => (existsSync(join(root, name)) ? createHash('sha256').update(readFileSync(join(root, name))).digest('hex') : null)
      return Object.fromEntries(FILES.map((name) => [name, of(name)]))
    },
    async close() {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
      rmSync(root, { recursive: true, force: true })
    },
  }
}
