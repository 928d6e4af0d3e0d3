// Shared wiring for the ledgerloop drivers, written against the public API
// (src/index.ts; test/meta/public-api.json lists it) and imported from the main package's build (../../dist).
// Until the lead lands the loop, ../dist/index.js lacks createHarness and the
// runner marks these rows "not built yet" without starting them.
import { createHarness, defineTool, JsonlStore, MemoryStore, scriptedAdapter } from '../../dist/index.js'
import type { GenerateOptions, LlmAdapter, StreamChunk } from '../../dist/index.js'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../src/workload.ts'

export type StoreKind = 'memory' | 'jsonl' | 'sqlite'

/**
 * A ledgerloop row's set-up, parsed from a variant such as `memory`, `memory+replay`, `memory+scope`,
 * `jsonl+interval`: the store, then `+` flags.
 * - `replay`: the model is `scriptedAdapter` (prebuilt frozen chunks replayed without a generator: the fast
 *   path); without it the model is a plain `async *` generator that builds each chunk as it goes, as a real
 *   adapter (and every peer's test double) does.
 * - `queue`: the eager double (see `queueAdapter`): chunks built fresh per request, served without a generator,
 *   as pi's double pushes its events before its loop reads them.
 * - `scope`: `createHarness({ initiatorScope: true })` (an AsyncLocalStorage frame around every agent's work).
 * - `interval`: `new JsonlStore({ dir, fsync: 'interval' })` (batched writes without an fsync per step).
 */
export interface LedgerVariant {
  readonly store: StoreKind
  readonly replay: boolean
  readonly queue: boolean
  readonly scope: boolean
  readonly interval: boolean
}

export function parseVariant(variant: string): LedgerVariant {
  const [store = '', ...flags] = variant.split('+')
  if (store !== 'memory' && store !== 'jsonl' && store !== 'sqlite') throw new Error(`unknown ledgerloop store '${store}'`)
  const known = new Set(['replay', 'queue', 'scope', 'interval'])
  for (const flag of flags) if (!known.has(flag)) throw new Error(`unknown ledgerloop flag '${flag}' in '${variant}'`)
  if (flags.includes('interval') && store !== 'jsonl') throw new Error(`'interval' needs the jsonl store ('${variant}')`)
  return { store, replay: flags.includes('replay'), queue: flags.includes('queue'), scope: flags.includes('scope'), interval: flags.includes('interval') }
}

/** Thrown when the build at hand has no `fsync: 'interval'` mode: the runner reports the row "not available". */
export const NOT_AVAILABLE = 'NOT AVAILABLE'

/** `new JsonlStore({ dir, fsync: 'interval' })`, or an error naming why this build refuses it. */
export function intervalJsonlStore(dir: string): JsonlStore {
  // The option may not be in this build's types yet: pass it as data and let the store accept or refuse it.
  const options = { dir, fsync: 'interval' } as unknown as ConstructorParameters<typeof JsonlStore>[0]
  try {
    return new JsonlStore(options)
  } catch (error) {
    throw new Error(`${NOT_AVAILABLE}: JsonlStore refuses fsync 'interval' (${error instanceof Error ? error.message : String(error)})`)
  }
}

export async function openStore(v: Pick<LedgerVariant, 'store' | 'interval'>, dir: string) {
  if (v.store === 'memory') return new MemoryStore()
  if (v.store === 'jsonl') return v.interval ? intervalJsonlStore(dir) : new JsonlStore({ dir })
  const { SqliteStore } = await import('../../dist/store/sqlite.js')
  return new SqliteStore({ path: `${dir}/sessions.sqlite` })
}

export type LedgerAgent = Awaited<ReturnType<ReturnType<typeof createHarness>['createAgent']>>

/** A harness whose model and tool play whichever workload is current. */
export interface BenchHarness {
  current: Workload | undefined
  readonly harness: ReturnType<typeof createHarness>
  newAgent(): Promise<LedgerAgent>
  /** Disposes a run's agent and frees its session where the store holds it in memory. */
  release(agent: LedgerAgent): Promise<void>
  close(): Promise<void>
}

const USAGE = { inputTokens: 10, outputTokens: 5 }

/**
 * The plain model: an `async *` generator that asks the workload for the step's plan and builds every chunk
 * object as it yields it (nothing prebuilt, nothing frozen), the shape of the peers' test doubles.
 */
export function plainAdapter(provider: string, workload: () => Workload): LlmAdapter {
  return {
    provider,
    async *stream(request: GenerateOptions): AsyncGenerator<StreamChunk> {
      const plan = workload().beginStep(request.messages.length)
      const signal = request.signal
      yield { type: 'block-start', index: 0, blockType: 'text' }
      let text = ''
      for (const delta of plan.chunks) {
        signal?.throwIfAborted()
        text += delta
        yield { type: 'text-delta', index: 0, text: delta }
      }
      yield { type: 'block-end', index: 0, block: { type: 'text', text } }
      const call = plan.toolCall
      if (call) {
        yield { type: 'block-start', index: 1, blockType: 'tool-call' }
        yield { type: 'tool-call-delta', index: 1, id: call.id, name: call.name, argumentsDelta: call.argumentsJson }
        yield { type: 'block-end', index: 1, block: { type: 'tool-call', id: call.id, name: call.name, arguments: call.argumentsJson } }
      }
      yield { type: 'usage', usage: { ...USAGE } }
      yield { type: 'finish', reason: { kind: call ? 'tool-calls' : 'stop' } }
    },
  }
}

/**
 * The eager double (`+queue`): every chunk of the step built fresh (unfrozen) when the request arrives, then
 * served from that array by a plain async iterator, one resolved promise per chunk: the shape of pi's own
 * double (events pushed into its stream before the loop reads them), for the like-for-like pi comparison.
 */
export function queueAdapter(provider: string, workload: () => Workload): LlmAdapter {
  return {
    provider,
    stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
      const plan = workload().beginStep(request.messages.length)
      const chunks: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
      let text = ''
      for (const delta of plan.chunks) {
        text += delta
        chunks.push({ type: 'text-delta', index: 0, text: delta })
      }
      chunks.push({ type: 'block-end', index: 0, block: { type: 'text', text } })
      const call = plan.toolCall
      if (call) {
        chunks.push({ type: 'block-start', index: 1, blockType: 'tool-call' })
        chunks.push({ type: 'tool-call-delta', index: 1, id: call.id, name: call.name, argumentsDelta: call.argumentsJson })
        chunks.push({ type: 'block-end', index: 1, block: { type: 'tool-call', id: call.id, name: call.name, arguments: call.argumentsJson } })
      }
      chunks.push({ type: 'usage', usage: { ...USAGE } })
      chunks.push({ type: 'finish', reason: { kind: call ? 'tool-calls' : 'stop' } })
      let i = 0
      const iterator: AsyncIterableIterator<StreamChunk> = {
        [Symbol.asyncIterator]: () => iterator,
        next: () => Promise.resolve(i < chunks.length ? { done: false, value: chunks[i++] as StreamChunk } : { done: true, value: undefined }),
      }
      return iterator
    },
  }
}

/** The fast path: `scriptedAdapter` replaying the step's chunks, prebuilt and frozen, without a generator. */
function replayAdapter(workload: () => Workload): LlmAdapter {
  return scriptedAdapter({
    // Every request holds the whole history: recording them all would grow quadratically over a long turn.
    recordRequests: false,
    script: (request) => {
      const plan = workload().beginStep(request.messages.length)
      const call = plan.toolCall
      return {
        text: [...plan.chunks],
        ...(call ? { toolCalls: [{ id: call.id, name: call.name, arguments: call.argumentsJson }] } : {}),
        finish: call ? 'tool-calls' : 'stop',
        usage: USAGE,
      }
    },
  })
}

export async function openHarness(variant: LedgerVariant, dir: string): Promise<BenchHarness> {
  const state: { current: Workload | undefined } = { current: undefined }
  const workload = () => {
    if (!state.current) throw new Error('no current workload')
    return state.current
  }
  const adapter = variant.replay ? replayAdapter(workload) : variant.queue ? queueAdapter('scripted', workload) : plainAdapter('scripted', workload)
  const bump = defineTool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: { type: 'object', properties: { step: { type: 'number' } }, required: ['step'] },
    execute: (args: unknown) => workload().runTool(args),
  })
  const store = await openStore(variant, dir)
  const harness = createHarness({
    store,
    adapters: [adapter],
    tools: [bump],
    system: SYSTEM_PROMPT,
    ...(variant.scope ? { initiatorScope: true } : {}),
  })
  return {
    harness,
    get current() {
      return state.current
    },
    set current(w) {
      state.current = w
    },
    newAgent: () => harness.createAgent({ provider: 'scripted', model: 'bench' }),
    async release(agent) {
      await agent.dispose()
      // A MemoryStore keeps every session until told otherwise: drop each finished run's log so warm-up runs
      // do not inflate the measured run's heap and RSS (file stores keep theirs on disk, not in memory).
      if (store instanceof MemoryStore) store.delete(agent.id)
    },
    close: () => harness.close(),
  }
}

/** Seq of the last `turn/end` at or after `from`, or -1 (reads by index: `session.events` copies the log). */
function lastTurnEnd(agent: LedgerAgent, from: number): number {
  const session = agent.session
  for (let seq = session.length - 1; seq >= from; seq--) if (session.at(seq)?.type === 'turn/end') return seq
  return -1
}

/** Send the prompt as a new turn and wait until that turn has ended; throw unless it completed. */
export async function runTurn(agent: LedgerAgent, prompt: string = PROMPT): Promise<void> {
  const from = agent.session.length
  agent.followup(prompt)
  // whenIdle may resolve before the wake is observed; wait for the turn/end itself (bounded).
  for (let i = 0; i < 1000 && lastTurnEnd(agent, from) < 0; i++) {
    await agent.whenIdle()
    if (lastTurnEnd(agent, from) < 0) await new Promise((r) => setImmediate(r))
  }
  const seq = lastTurnEnd(agent, from)
  if (seq < 0) throw new Error('ledgerloop turn never ended')
  const reason = (agent.session.at(seq)?.data as { reason?: { kind?: string } } | null)?.reason?.kind
  if (reason !== 'completed') throw new Error(`ledgerloop turn ended '${reason}'`)
}
