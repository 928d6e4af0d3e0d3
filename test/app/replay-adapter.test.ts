import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { replayAdapter } from '../../src/app/replay-adapter.js'
import { recordedTools } from '../../src/app/recorded-tools.js'
import { createHarness, type HarnessOptions } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { invariantPlugin } from '../../src/plugins/invariant.js'
import type { SessionEvent } from '../../src/session/events.js'
import { defineTool } from '../../src/tools/define-tool.js'
import type { ToolDefinition } from '../../src/tools/types.js'

const MODELS = { m: { defaultMaxTokens: 100, contextWindow: 1000 } }

/** Tools whose bodies count how often they ran: the side effects a replay must not have. */
function countingTools(): { tools: ToolDefinition<never>[]; runs: { count: number } } {
  const runs = { count: 0 }
  const tools = [
    defineTool({ name: 'lookup', description: 'Looks a word up', parameters: z.object({ word: z.string() }), execute: ({ word }) => (runs.count++, `${word}: a thing`) }),
    defineTool({ name: 'note', description: 'Writes a note', parameters: z.object({ text: z.string(), tag: z.string().optional() }), execute: () => (runs.count++, 'noted') }),
  ]
  return { tools, runs }
}

const SCRIPT: ScriptStep[] = [
  { text: 'Looking.', toolCalls: [{ name: 'lookup', arguments: { word: 'cat' } }, { name: 'note', arguments: { text: 'cat', tag: 'x' } }], usage: { inputTokens: 10, outputTokens: 5 } },
  { text: ['A cat ', 'is a thing.'], usage: { inputTokens: 20, outputTokens: 6 } },
  { text: 'Bye.' },
]

async function record(system = 'You are terse.'): Promise<{ events: SessionEvent[]; runs: { count: number } }> {
  const { tools, runs } = countingTools()
  const harness = createHarness({ adapters: [scriptedAdapter({ script: SCRIPT, models: MODELS })], tools, system, plugins: [invariantPlugin()] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  await agent.run('what is a cat?')
  await agent.run('thanks')
  const events = [...agent.session.events]
  await harness.close()
  return { events, runs }
}

async function replay(events: readonly SessionEvent[], options: Partial<HarnessOptions> & { adapter?: ReturnType<typeof replayAdapter> } = {}) {
  const adapter = options.adapter ?? replayAdapter({ events })
  const harness = createHarness({ adapters: [adapter], tools: recordedTools(events), system: 'You are terse.', plugins: [invariantPlugin()], ...options })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  const first = await agent.run('what is a cat?')
  const second = await agent.run('thanks')
  const fresh = [...agent.session.events]
  await harness.close()
  return { adapter, first, second, fresh }
}

describe('replayAdapter', () => {
  it('answers an unchanged agent from the recording: no divergence, every request served, no tool body runs', async () => {
    const { events, runs } = await record()
    expect(runs.count).toBe(2)
    const { adapter, first, second } = await replay(events)
    expect(adapter.divergences).toEqual([])
    expect(adapter.served).toBe(3)
    expect(runs.count).toBe(2)
    expect(first.text).toBe('A cat is a thing.')
    expect(first.toolCalls.map((c) => [c.name, c.result])).toEqual([['lookup', 'cat: a thing'], ['note', 'noted']])
    expect(second.text).toBe('Bye.')
    expect(first.usage).toEqual({ inputTokens: 30, outputTokens: 11 })
  })

  it('a changed system prompt diverges at request 1, path system, and the turn ends REPLAY_DIVERGED carrying it', async () => {
    const { events } = await record()
    const { adapter, first, fresh } = await replay(events, { system: 'You are chatty.' })
    expect(adapter.divergences[0]).toEqual({ request: 1, path: 'system', expected: 'You are terse.', actual: 'You are chatty.' })
    expect(adapter.served).toBe(0)
    expect(first.reason).toMatchObject({ kind: 'error', error: { code: 'REPLAY_DIVERGED' } })
    expect(first.reason.kind === 'error' && first.reason.error.message).toMatch(/request 1 diverged from the recording at system: expected "You are terse.", got "You are chatty."/)
    // The logged finish chunk keeps the structured divergence.
    const finish = fresh.find((e) => e.type === 'assistant/chunk' && (e.data as { chunk: { type: string } }).chunk.type === 'finish')
    expect((finish?.data as unknown as { chunk: { reason: { failure: { divergence: unknown } } } }).chunk.reason.failure.divergence).toEqual(adapter.divergences[0])
  })

  it('an added tool diverges at tools, naming the lists; a changed schema at tools[i].parameters…', async () => {
    const { events } = await record()
    const extra = defineTool({ name: 'extra', description: 'New', parameters: z.object({}), execute: () => '' })
    const added = await replay(events, { tools: [...recordedTools(events), extra] })
    expect(added.adapter.divergences[0]).toEqual({ request: 1, path: 'tools', expected: ['lookup', 'note'], actual: ['extra', 'lookup', 'note'] })

    const [lookup, note] = recordedTools(events) as [ToolDefinition, ToolDefinition]
    // Built afresh rather than spread: the recorded tools come defined, and a defined tool's brand survives a spread.
    const changed = defineTool({ name: note.name, description: note.description, execute: note.execute as never, parameters: z.object({ text: z.string() }) })
    const schema = await replay(events, { tools: [lookup, changed] })
    expect(schema.adapter.divergences[0]?.path).toMatch(/^tools\[1\]\.parameters\./)
  })

  it('a changed user input diverges at its message path', async () => {
    const { events } = await record()
    const adapter = replayAdapter({ events })
    const harness = createHarness({ adapters: [adapter], tools: recordedTools(events), system: 'You are terse.' })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    await agent.run('what is a dog?')
    await harness.close()
    expect(adapter.divergences[0]).toEqual({ request: 1, path: 'messages[0].content[0].text', expected: 'what is a cat?', actual: 'what is a dog?' })
  })

  it("onDivergence 'live' goes on on the live adapter from exactly the diverging request", async () => {
    const { events } = await record()
    const live = scriptedAdapter({ script: [{ text: 'live answer' }], models: MODELS })
    const adapter = replayAdapter({ events, onDivergence: 'live', live })
    const harness = createHarness({ adapters: [adapter], tools: recordedTools(events), system: 'You are terse.' })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    const first = await agent.run('what is a cat?')
    const second = await agent.run('thank you') // differs from the recorded 'thanks': request 3
    await harness.close()
    expect(first.text).toBe('A cat is a thing.')
    expect(second.text).toBe('live answer')
    expect(adapter.served).toBe(2)
    expect(live.requests).toHaveLength(1)
    expect(adapter.divergences).toEqual([{ request: 3, path: 'messages[5].content[0].text', expected: 'thanks', actual: 'thank you' }])
  })

  it('a fresh loop asking more often than the recording diverges at path request', async () => {
    const { events } = await record()
    const { adapter } = await replay(events)
    const harness = createHarness({ adapters: [adapter], tools: recordedTools(events), system: 'You are terse.' })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    const extra = await agent.run('one more')
    await harness.close()
    expect(extra.reason).toMatchObject({ kind: 'error', error: { code: 'REPLAY_DIVERGED' } })
    expect(adapter.divergences.at(-1)).toMatchObject({ request: 4, path: 'request', expected: null })
  })

  it('a history entry rewritten in place (a pruned tool result) is found, though the history keeps its length and tail', async () => {
    const prune = (agent: { session: { events: readonly SessionEvent[]; append: (...args: never[]) => unknown } }): void => {
      const result = agent.session.events.find((e) => e.type === 'tool/result') as SessionEvent
      const data = result.data as { message: { content: object[] } }
      const block = { ...(data.message.content[0] as object), content: [{ type: 'text', text: '(pruned)' }] }
      ;(agent.session.append as (type: string, data: unknown, options: unknown) => unknown)('tool/result', { ...data, message: { ...data.message, content: [block] } }, { surfaceOp: { op: 'replace', start: result.seq, end: result.seq }, sourceEventSeqs: [result.seq] })
    }
    const play = async (adapter: ReturnType<typeof replayAdapter> | ReturnType<typeof scriptedAdapter>, tools: readonly ToolDefinition<never>[], pruning: boolean) => {
      const harness = createHarness({ adapters: [adapter], tools, system: 'You are terse.' })
      const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
      await agent.run('what is a cat?')
      if (pruning) prune(agent as never)
      await agent.run('thanks')
      const events = [...agent.session.events]
      await harness.close()
      return events
    }
    const recorded = await play(scriptedAdapter({ script: SCRIPT, models: MODELS }), countingTools().tools, true)
    const same = replayAdapter({ events: recorded })
    await play(same, recordedTools(recorded), true)
    expect(same.divergences).toEqual([])
    const unpruned = replayAdapter({ events: recorded })
    await play(unpruned, recordedTools(recorded), false)
    expect(unpruned.divergences).toEqual([{ request: 3, path: 'messages[2].content[0].content[0].text', expected: '(pruned)', actual: 'cat: a thing' }])
  })

  it('a history that is not the session\'s own view (rebuilt by a wrapping adapter) is walked in full: a swapped middle entry is found', async () => {
    const { events } = await record()
    const cassette = replayAdapter({ events })
    // Hands the cassette a copy of request 3's history with its first message (the prompt) rewritten: same length,
    // same tail, and every other entry the very objects the session holds.
    let n = 0
    const wrapper = {
      provider: cassette.provider,
      resolveModel: (model: string) => cassette.resolveModel?.(model),
      stream: (request: Parameters<typeof cassette.stream>[0]) => {
        if (++n !== 3) return cassette.stream(request)
        const [first, ...rest] = request.messages
        const swapped = { ...(first as object), content: [{ type: 'text', text: 'what is a dog?' }] }
        return cassette.stream({ ...request, messages: [swapped as unknown as (typeof request.messages)[number], ...rest] })
      },
    }
    await replay(events, { adapter: cassette, adapters: [wrapper] })
    expect(cassette.divergences).toEqual([{ request: 3, path: 'messages[0].content[0].text', expected: 'what is a cat?', actual: 'what is a dog?' }])
  })

  it('refuses live mode without a live adapter, and a recording with no request without a provider', () => {
    expect(() => replayAdapter({ events: [], onDivergence: 'live' })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    expect(() => replayAdapter({ events: [] })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    expect(replayAdapter({ events: [], provider: 'p' }).provider).toBe('p')
  })

  it('a recorded stream cut off by a cancel plays its chunks, then waits for the abort', async () => {
    const harness = createHarness({ adapters: [scriptedAdapter({ script: [{ text: ['a', 'b', 'c', 'd'], delayMs: 30 }], models: MODELS })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    const seen: string[] = []
    harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk' && (event.data as { chunk: { type: string } }).chunk.type === 'text-delta') {
        seen.push('x')
        if (seen.length === 2) agent.cancel()
      }
    })
    await agent.run('go')
    const events = [...agent.session.events]
    await harness.close()

    const adapter = replayAdapter({ events })
    const again = createHarness({ adapters: [adapter] })
    const replayed = await again.createAgent({ provider: 'scripted', model: 'm' })
    let deltas = 0
    again.hooks.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk' && (event.data as { chunk: { type: string } }).chunk.type === 'text-delta' && ++deltas === 2) setTimeout(() => replayed.cancel(), 5)
    })
    const result = await replayed.run('go')
    await again.close()
    expect(result.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    expect(deltas).toBe(2)
    expect(adapter.divergences).toEqual([])
  })
})

describe('recordedTools', () => {
  it('keeps the recorded names and schemas and answers with the recorded results, by id or by arguments', async () => {
    const { events } = await record()
    const tools = recordedTools(events)
    expect(tools.map((t) => t.name)).toEqual(['lookup', 'note'])
    const lookup = tools[0] as ToolDefinition
    // Another id (a live model mints its own), the same tool and arguments: the recorded result.
    expect(await lookup.execute({ word: 'cat' }, { callId: 'other', signal: new AbortController().signal } as never)).toEqual({ content: [{ type: 'text', text: 'cat: a thing' }] })
    // Matched by arguments, each recorded call answers once; by its own id, every time (a set shared by replays).
    await expect(async () => lookup.execute({ word: 'cat' }, { callId: 'other2' } as never)).rejects.toMatchObject({ code: 'REPLAY_DIVERGED' })
    const id = (events.find((e) => e.type === 'tool/call') as SessionEvent & { data: { callId: string } }).data.callId
    expect(await lookup.execute({ word: 'cat' }, { callId: id } as never)).toEqual({ content: [{ type: 'text', text: 'cat: a thing' }] })
    expect(await lookup.execute({ word: 'cat' }, { callId: id } as never)).toEqual({ content: [{ type: 'text', text: 'cat: a thing' }] })
    // The same id with other arguments is another call.
    await expect(async () => lookup.execute({ word: 'dog' }, { callId: id } as never)).rejects.toMatchObject({ code: 'REPLAY_DIVERGED' })
  })

  it('a call the recording never made fails REPLAY_DIVERGED in the log, and nothing runs', async () => {
    const { events, runs } = await record()
    // The recording without its `note` call: the model's (recorded) call to note is no longer covered.
    const noteCall = events.find((e) => e.type === 'tool/call' && (e.data as { name: string }).name === 'note') as SessionEvent
    const without = events.filter((e) => !(e.type === 'tool/call' && e.seq === noteCall.seq))
    const { first } = await replay(events, { tools: recordedTools(without) })
    const note = first.toolCalls.find((c) => c.name === 'note')
    expect(note).toMatchObject({ isError: true })
    expect(note?.result).toMatch(/replay diverged: note was called/)
    expect(runs.count).toBe(2)
  })
})
