// Shared wiring for the ledgerloop drivers, written against the public API in
// shared/API.md and imported from the main package's build (../../dist).
// Until the lead lands the loop, ../dist/index.js lacks createHarness and the
// runner marks these rows "not built yet" without starting them.
import { createHarness, defineTool, JsonlStore, MemoryStore, scriptedAdapter } from '../../dist/index.js'
import { PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../src/workload.ts'

export type StoreKind = 'memory' | 'jsonl' | 'sqlite'

export function storeKind(name: string): StoreKind {
  if (name === 'memory' || name === 'jsonl' || name === 'sqlite') return name
  throw new Error(`unknown ledgerloop store '${name}'`)
}

async function openStore(kind: StoreKind, dir: string) {
  if (kind === 'memory') return new MemoryStore()
  if (kind === 'jsonl') return new JsonlStore({ dir })
  const { SqliteStore } = await import('../../dist/store/sqlite.js')
  return new SqliteStore({ path: `${dir}/sessions.sqlite` })
}

type LedgerAgent = Awaited<ReturnType<ReturnType<typeof createHarness>['createAgent']>>

/** A harness whose scripted model and tool play whichever workload is current. */
export interface BenchHarness {
  current: Workload | undefined
  newAgent(): Promise<LedgerAgent>
  /** Disposes a run's agent and frees its session where the store holds it in memory. */
  release(agent: LedgerAgent): Promise<void>
  close(): Promise<void>
}

export async function openHarness(kind: StoreKind, dir: string): Promise<BenchHarness> {
  const state: { current: Workload | undefined } = { current: undefined }
  const workload = () => {
    if (!state.current) throw new Error('no current workload')
    return state.current
  }
  const adapter = scriptedAdapter({
    // Every request holds the whole history: recording them all would grow quadratically over a long turn.
    recordRequests: false,
    script: (request) => {
      const plan = workload().beginStep(request.messages.length)
      const call = plan.toolCall
      return {
        text: [...plan.chunks],
        ...(call ? { toolCalls: [{ id: call.id, name: call.name, arguments: call.argumentsJson }] } : {}),
        finish: call ? 'tool-calls' : 'stop',
        usage: { inputTokens: 10, outputTokens: 5 },
      }
    },
  })
  const bump = defineTool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: { type: 'object', properties: { step: { type: 'number' } }, required: ['step'] },
    execute: (args: unknown) => workload().runTool(args),
  })
  const store = await openStore(kind, dir)
  const harness = createHarness({ store, adapters: [adapter], tools: [bump] })
  return {
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
export async function runTurn(agent: LedgerAgent): Promise<void> {
  const from = agent.session.length
  agent.followup(PROMPT)
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
