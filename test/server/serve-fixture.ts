import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { defineTool, invariantPlugin, JsonlStore, scriptedAdapter, type ScriptStep, type SessionStore } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { createLedgerServer, type LedgerServer, type LedgerServerOptions } from '../../src/server/index.js'

export const TOKEN = 'test-token-0123456789'

/**
 * The scripted model of the server tests, steered by the last user text:
 * - `deploy …` asks for the `deploy` tool (which needs approval), then answers `deployed`;
 * - `echo …` calls the allowed `echo` tool, then answers;
 * - `slow …` streams ten text chunks 40 ms apart;
 * - `hang …` streams nothing until cancelled;
 * - anything else answers `hello back` with usage figures.
 */
export function serveScript(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  const block = last?.content[last.content.length - 1]
  if (block?.type === 'tool-result') return { text: ['done: ', 'tool ran'], usage: { inputTokens: 30, outputTokens: 4, cacheReadTokens: 20 } }
  const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
  if (text.startsWith('deploy')) return { text: 'Deploying.', toolCalls: [{ name: 'deploy', arguments: { target: 'staging' } }], usage: { inputTokens: 20, outputTokens: 6 } }
  if (text.startsWith('echo')) return { toolCalls: [{ name: 'echo', arguments: { text: text.slice(5) } }], usage: { inputTokens: 18, outputTokens: 5 } }
  if (text.startsWith('slow')) return { text: Array.from({ length: 10 }, (_, i) => `part${i} `), delayMs: 40, usage: { inputTokens: 12, outputTokens: 10 } }
  if (text.startsWith('hang')) return { hang: true }
  return { text: ['hello ', 'back'], usage: { inputTokens: 10, outputTokens: 2 } }
}

/** The tools of the server tests: `echo` (allowed by rule) and `deploy` (asks). */
export function serveTools(deployed: string[] = []) {
  return [
    defineTool({ name: 'echo', description: 'Echoes its text', parameters: z.object({ text: z.string() }), execute: ({ text }) => `echo: ${text}` }),
    defineTool({
      name: 'deploy',
      description: 'Deploys to a target',
      parameters: z.object({ target: z.string() }),
      execute: ({ target }) => {
        deployed.push(target)
        return `deployed to ${target}`
      },
    }),
  ]
}

/** A served store in a fresh folder, listening on a free loopback port. */
export interface ServeFixture {
  readonly server: LedgerServer
  readonly base: string
  readonly store: SessionStore
  readonly dir: string
  readonly deployed: string[]
  /** `fetch` against the server with the token. */
  api(path: string, init?: RequestInit): Promise<Response>
  /** POSTs JSON with the token. */
  post(path: string, body?: unknown): Promise<Response>
  /** Polls until `check` holds (or fails after `ms`). */
  until<T>(check: () => Promise<T | undefined | false>, ms?: number): Promise<T>
  close(): Promise<void>
}

/** Starts a server over a JSONL store with the scripted model, the invariant plugin and the test tools. */
export async function startServe(overrides: Partial<LedgerServerOptions> = {}, agentOptions: { releaseIdleMs?: number } = {}): Promise<ServeFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'ledgerloop-serve-'))
  const store = overrides.store ?? new JsonlStore({ dir })
  const deployed: string[] = []
  const server = await createLedgerServer({
    store,
    agents: {
      adapters: [scriptedAdapter({ script: serveScript, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } })],
      tools: serveTools(deployed),
      plugins: [invariantPlugin()],
      defaults: { provider: 'scripted', model: 'm1' },
      permissions: { allow: ['echo'] },
      cwd: dir,
      pollMs: 50,
      ...agentOptions,
    },
    token: TOKEN,
    port: 0,
    // Made-up prices that make the scripted usage visible: $1000 / $2000 per million input / output tokens.
    pricing: { m1: { pricing: { currency: 'USD', inputPerMTok: 1000, outputPerMTok: 2000, asOf: '2026-12-01' } } },
    ...overrides,
  })
  const base = await server.listen()
  const api = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) } })
  return {
    server,
    base,
    store,
    dir,
    deployed,
    api,
    post: (path, body) => api(path, { method: 'POST', ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) }),
    async until(check, ms = 10_000) {
      const deadline = Date.now() + ms
      for (;;) {
        const value = await check()
        if (value !== undefined && value !== false) return value as never
        if (Date.now() > deadline) throw new Error('condition not reached in time')
        await new Promise((r) => setTimeout(r, 25))
      }
    },
    async close() {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
