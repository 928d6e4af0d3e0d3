/**
 * Recorded sessions as regression tests: record a session once, then check in CI — with no key, no network and
 * no side effects — that the agent as configured today still sends the same requests and gets the same answers.
 *
 * Here the "real" session is recorded with the scripted model in `beforeAll`, into a session folder that plays
 * the part of a fixture folder checked into your repository (docs/testing.md: record a real session once with
 * a key, copy its `<id>.jsonl` into the fixtures, replay it in CI).
 *
 *   npx vitest run examples/regression.test.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createHarness,
  defineTool,
  invariantPlugin,
  JsonlStore,
  recordedTools,
  replayAdapter,
  scriptedAdapter,
  type LlmAdapter,
  type SessionEvent,
  type ToolDefinition,
} from 'ledgerloop'

// ---- the application: how it builds its agent (in a real project this lives in src/, not in the test) ----

/** Counts how often a tool body really ran: a replay must leave it alone. */
const sideEffects = { orders: 0 }

const liveTools = [
  defineTool({
    name: 'find_order',
    description: 'Looks an order up by its number',
    parameters: z.object({ order: z.string() }),
    execute: ({ order }) => JSON.stringify({ order, status: 'shipped', carrier: 'DHL' }),
  }),
  defineTool({
    name: 'email_customer',
    description: 'Emails the customer (a real side effect)',
    parameters: z.object({ order: z.string(), text: z.string() }),
    execute: () => {
      sideEffects.orders++
      return 'sent'
    },
  }),
]

const SYSTEM = 'You are a support agent. Look orders up before answering; email the customer when asked.'

/** The one place the app composes its agent: the tests below swap in the cassette and the recorded tools. */
function supportHarness(parts: { adapter: LlmAdapter; tools: readonly ToolDefinition<never>[]; system?: string; dir?: string }) {
  return createHarness({
    adapters: [parts.adapter],
    tools: parts.tools,
    system: parts.system ?? SYSTEM,
    plugins: [invariantPlugin()],
    ...(parts.dir !== undefined ? { store: new JsonlStore({ dir: parts.dir }) } : {}),
  })
}

const PROMPTS = ['Where is order 1234?', 'Please email them that it is on its way.']

// ---- recording (once, with a real model; here the scripted one stands in for it) ----

const fixtures = mkdtempSync(join(tmpdir(), 'll-fixtures-'))
let sessionId = ''

beforeAll(async () => {
  const model = scriptedAdapter({
    provider: 'deepseek', // the route the real session ran on: the cassette answers on the same route
    script: [
      { toolCalls: [{ name: 'find_order', arguments: { order: '1234' } }], usage: { inputTokens: 310, outputTokens: 18 } },
      { text: ['Order 1234 has shipped ', 'with DHL.'], usage: { inputTokens: 360, outputTokens: 9 } },
      { toolCalls: [{ name: 'email_customer', arguments: { order: '1234', text: 'Your order is on its way.' } }] },
      { text: 'Done: the customer has been emailed.' },
    ],
  })
  const harness = supportHarness({ adapter: model, tools: liveTools, dir: fixtures })
  const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-chat' })
  for (const prompt of PROMPTS) await agent.run(prompt)
  sessionId = agent.id
  await harness.close()
  sideEffects.orders = 0 // the recording emailed once; from here on nothing may
})

afterAll(() => rmSync(fixtures, { recursive: true, force: true }))

/** The fixture, read the way CI reads it: from the session folder. */
async function recording(): Promise<readonly SessionEvent[]> {
  return (await new JsonlStore({ dir: fixtures }).read(sessionId)).events
}

// ---- the regression tests ----

describe('the support agent still behaves as recorded', () => {
  it('builds the same requests, gets the same answers, and runs no tool body', async () => {
    const events = await recording()
    const cassette = replayAdapter({ events })
    const harness = supportHarness({ adapter: cassette, tools: recordedTools(events) })
    const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-chat' })
    const answers = []
    for (const prompt of PROMPTS) answers.push(await agent.run(prompt))
    await harness.close()

    expect(cassette.divergences).toEqual([])
    expect(cassette.served).toBe(4)
    expect(answers.map((a) => a.text)).toEqual(['Order 1234 has shipped with DHL.', 'Done: the customer has been emailed.'])
    expect(answers[1]?.toolCalls.map((c) => c.name)).toEqual(['email_customer'])
    expect(sideEffects.orders).toBe(0)
  })

  it('a changed system prompt is caught at the first request, and says where', async () => {
    const events = await recording()
    const cassette = replayAdapter({ events })
    const harness = supportHarness({ adapter: cassette, tools: recordedTools(events), system: 'You are a pirate.' })
    const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-chat' })
    const result = await agent.run(PROMPTS[0] as string)
    await harness.close()

    // What a failing test shows: the turn failed REPLAY_DIVERGED with the path and both values.
    expect(result.failure?.code).toBe('REPLAY_DIVERGED')
    expect(result.failure?.message).toBe(`request 1 diverged from the recording at system: expected ${JSON.stringify(SYSTEM)}, got "You are a pirate."`)
    expect(cassette.divergences).toEqual([{ request: 1, path: 'system', expected: SYSTEM, actual: 'You are a pirate.' }])
  })
})
