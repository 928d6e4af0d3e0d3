import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { foldSession, verifySessionLog, type JsonValue, type SessionEvent, type TurnResult } from '../../src/index.js'
import { replaySession } from '../../src/app/replay-session.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { compareRequest } from '../../src/views/replay-recording.js'
import { reconstructionProblems } from '../../src/views/request-reconstruction.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

const Rating = z.object({ score: z.number().int().min(1).max(5), why: z.string() })

const headersOf = (events: readonly SessionEvent[]) =>
  events.filter((e) => e.type === 'request/header').map((e) => (e.data as { header: { config: { output?: { name: string; strict: boolean } } } }).header)

describe('structured output through agent.run({ output })', () => {
  it('returns the answer parsed and typed, and logs the output spec in the request header of that turn only', async () => {
    const f = await loopFixture([{ text: '{"score": 4, "why": "clear"}' }, { text: 'plain' }])
    const result = await f.agent.run('rate it', { output: Rating })
    expect(result.reason).toEqual({ kind: 'completed' })
    expect(result.output).toEqual({ score: 4, why: 'clear' })
    // The request carried the spec; zod's closed object with every key required is strict-compatible.
    const sent = f.model.requests[0]?.output
    expect(sent).toMatchObject({ name: 'final_answer', strict: true, schema: { type: 'object', required: ['score', 'why'], additionalProperties: false } })
    const plain = await f.agent.run('again')
    expect(plain.output).toBeUndefined()
    expect(f.model.requests[1]?.output).toBeUndefined()
    // Logged on the structured turn, dropped again by a header change on the next one.
    const headers = headersOf(f.agent.session.events)
    expect(headers.map((h) => h.config.output?.name)).toEqual(['final_answer', undefined])
    expect(f.errors).toEqual([])
  })

  it('sends an invalid answer back as a steer and takes the repaired one', async () => {
    const f = await loopFixture([{ text: '{"score": 9}' }, { text: '```json\n{"score": 5, "why": "fixed"}\n```' }])
    const result = await f.agent.run('rate it', { output: Rating })
    expect(result.reason).toEqual({ kind: 'completed' })
    expect(result.output).toEqual({ score: 5, why: 'fixed' })
    // One turn, two steps: the second opened by the repair message, which names what was wrong.
    expect(f.ofType('step/start')).toHaveLength(2)
    const repair = f.model.requests[1]?.messages.at(-1)
    expect(repair?.source).toEqual({ kind: 'plugin', plugin: 'ledgerloop/structured-output', form: 'notice' })
    const text = repair?.content[0]?.type === 'text' ? repair.content[0].text : ''
    expect(text).toContain('score')
    expect(text).toContain('why')
    expect(f.model.requests[1]?.output?.name).toBe('final_answer')
  })

  it('ends the turn error OUTPUT_INVALID with the issues once the repairs are used up', async () => {
    const f = await loopFixture([{ text: 'not json' }, { text: '{"score": 0, "why": "x"}' }])
    const result = await f.agent.run('rate it', { output: Rating, outputRepairs: 1 })
    expect(result.reason.kind).toBe('error')
    expect(result.failure?.code).toBe('OUTPUT_INVALID')
    expect(result.failure?.message).toMatch(/after 1 repair step: score: /)
    expect(result.output).toBeUndefined()
    expect(f.model.requests).toHaveLength(2)
    // The failure is the turn's: the next run works.
    f.model.requests.length = 0
  })

  it('with outputRepairs 0 fails at once on a reply that is not JSON', async () => {
    const f = await loopFixture([{ text: 'Sure! Here it is.' }])
    const result = await f.agent.run('rate it', { output: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, outputRepairs: 0 })
    expect(result.failure).toMatchObject({ code: 'OUTPUT_INVALID' })
    expect(result.failure?.message).toContain('the answer is not JSON')
  })

  it('checks a plain JSON Schema with ajv and returns the JSON value; a schema with an open object is not strict', async () => {
    const schema = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } } }, required: ['tags'] }
    const f = await loopFixture([{ text: 'The tags are:\n{"tags": ["a", "b"]}' }])
    const result = await f.agent.run('tag it', { output: schema, outputName: 'tags', outputDescription: 'the tags' })
    expect(result.output).toEqual({ tags: ['a', 'b'] })
    expect(f.model.requests[0]?.output).toEqual({ name: 'tags', description: 'the tags', schema, strict: false })
  })

  it('runs tools on the way to the answer; only the final text is checked', async () => {
    const f = await loopFixture(
      [{ text: 'let me look', toolCalls: [{ name: 'echo', arguments: { text: 'a' } }] }, { text: '{"score": 3, "why": "echoed"}' }],
      { tools: [echoTool()] },
    )
    const result = await f.agent.run('rate it', { output: Rating })
    expect(result.output).toEqual({ score: 3, why: 'echoed' })
    expect(result.toolCalls).toHaveLength(1)
  })

  it('does not repair a reply cut at the output limit: the turn ends max-tokens without output', async () => {
    const f = await loopFixture([{ text: '{"score": 4, "wh', finish: 'max-tokens' }])
    const result = await f.agent.run('rate it', { output: Rating })
    expect(result.reason).toEqual({ kind: 'max-tokens' })
    expect(result.output).toBeUndefined()
    expect(f.model.requests).toHaveLength(1)
  })

  it('rejects a schema that does not compile and a bad repair bound, queuing nothing', async () => {
    const f = await loopFixture([{ text: '{}' }])
    await expect(f.agent.run('x', { output: { type: 'no-such-type' } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(f.agent.run('x', { output: Rating, outputRepairs: -1 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(f.agent.run('x', { output: Rating, outputName: 'has space' })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    expect(f.model.requests).toHaveLength(0)
    expect(f.agent.inbox.hasPending).toBe(false)
  })

  it('streams the same run: the turn-end part and .result carry the output', async () => {
    const f = await loopFixture([{ text: ['{"score": 2,', ' "why": "streamed"}'] }])
    const turn = f.agent.stream('rate it', { output: Rating })
    let ended: TurnResult | undefined
    for await (const part of turn) if (part.type === 'turn-end') ended = part.result
    expect(ended?.output).toEqual({ score: 2, why: 'streamed' })
    expect((await turn.result).output?.why).toBe('streamed')
  })

  it('a structured session verifies: every request rebuilds from the log with its output spec', async () => {
    const f = await loopFixture([{ text: '{"score": 9}' }, { text: '{"score": 1, "why": "ok"}' }, { text: 'plain' }])
    await f.agent.run('rate it', { output: Rating })
    await f.agent.run('plain now')
    const events = f.agent.session.events
    expect(verifySessionLog(events)).toEqual({ ok: true, problems: [] })
    expect(reconstructionProblems(events)).toEqual([])
    // A fold of the log before the second request yields the header that request was sent with.
    const secondChunk = events.filter((e) => e.type === 'assistant/chunk')[2] as SessionEvent
    const folded = foldSession(events.slice(0, secondChunk.seq)).header
    expect(folded?.config.output).toEqual(f.model.requests[1]?.output)
  })

  it('a structured session replays: the fresh requests carry the recorded output spec, and a request without it differs', async () => {
    const f = await loopFixture([{ text: '{"score": 4, "why": "clear"}' }, { text: 'plain' }])
    await f.agent.run('rate it', { output: Rating })
    await f.agent.run('plain now')
    const events = [...f.agent.session.events]
    // The fixture's model table, so the replay materialises the same default maxTokens.
    const facts = () => () => ({ contextWindow: 1000, defaultMaxTokens: 100 })
    const report = await replaySession(events, facts)
    expect(report.problems).toEqual([])
    expect(report.compared).toBe(2)
    // The comparison covers the spec: the structured request rebuilt from the log, against one without it.
    const header = foldSession(events.slice(0, events.find((e) => e.type === 'assistant/chunk')?.seq)).header
    const sent = f.model.requests[0] as GenerateOptions
    expect(compareRequest({ messages: sent.messages, header }, sent)).toBeUndefined()
    const { output: _dropped, ...withoutOutput } = sent
    expect(compareRequest({ messages: sent.messages, header }, withoutOutput)).toMatch(/^output differs/)
  })
})

// Type-level: the output is inferred from a zod schema, a JSON value for a JSON Schema, unknown without one.
async function typeChecks(agent: Awaited<ReturnType<typeof loopFixture>>['agent']): Promise<void> {
  const typed = await agent.run('x', { output: Rating })
  const score: number | undefined = typed.output?.score
  // @ts-expect-error `score` is a number, not a string
  const wrong: string | undefined = typed.output?.score
  const json = await agent.run('x', { output: { type: 'object' } })
  const value: JsonValue | undefined = json.output
  const plain = await agent.run('x')
  // @ts-expect-error without a schema the output is unknown
  const nope: number | undefined = plain.output
  const streamed = await agent.stream('x', { output: Rating }).result
  const why: string | undefined = streamed.output?.why
  void [score, wrong, value, nope, why]
}
void typeChecks
