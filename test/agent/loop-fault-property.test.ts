import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { z } from 'zod'
import { defineTool, permissionPlugin, verifySessionLog, type ScriptStep, type SessionEvent } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { faultyStore, openAiChatRuleProblem } from '../support/faults.js'

type Call = { name: string; arguments: string | object }

/** Tool calls the model may make: safe, slow, exclusive (needs approval), non-JSON output, unknown, malformed. */
const callArb: fc.Arbitrary<Call> = fc.oneof(
  fc.constant({ name: 'echo', arguments: { text: 'e' } }),
  fc.record({ name: fc.constant('slow'), arguments: fc.record({ ms: fc.integer({ min: 0, max: 3 }) }) }),
  fc.constant({ name: 'guarded', arguments: {} }),
  fc.constant({ name: 'weird', arguments: {} }),
  fc.constant({ name: 'missing', arguments: {} }),
  fc.constant({ name: 'echo', arguments: '{"text": ' }),
)

const stepArb: fc.Arbitrary<ScriptStep> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ text: fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 3 }) }) },
  { weight: 5, arbitrary: fc.record({ text: fc.constant('calling'), toolCalls: fc.array(callArb, { minLength: 1, maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ error: fc.record({ code: fc.constantFrom('SERVER', 'AUTH') }) }) },
  { weight: 1, arbitrary: fc.constant({ hang: true as const }) },
)

const VETOABLE = ['turn/start', 'step/start', 'user/message', 'assistant/chunk', 'assistant/message', 'tool/call', 'tool/result', 'step/end', 'turn/end'] as const

/** Which failures to inject in one run. `nth` counts matching events; each fault fires once. */
const faultsArb = fc.record({
  preThrowOnCall: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  postThrowOnCall: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  approver: fc.constantFrom('yes', 'throw', 'reject-on-abort', 'no'),
  veto: fc.option(fc.record({ type: fc.constantFrom(...VETOABLE), nth: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
  storeFail: fc.option(fc.record({ type: fc.constantFrom(...VETOABLE), nth: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
  cancelAtEvent: fc.option(fc.integer({ min: 2, max: 80 }), { nil: undefined }),
})

type Faults = typeof faultsArb extends fc.Arbitrary<infer T> ? T : never

/** True once, on the nth event of the given type. */
function once(spec: { type: string; nth: number } | undefined): (event: SessionEvent) => boolean {
  let seen = 0
  return (event) => spec !== undefined && event.type === spec.type && ++seen === spec.nth
}

const tools = [
  echoTool([], { concurrencySafe: true }),
  defineTool({
    name: 'slow',
    description: 'waits a little',
    parameters: z.object({ ms: z.number() }),
    concurrencySafe: true,
    execute: async ({ ms }, { signal }) => {
      await new Promise((r) => setTimeout(r, ms))
      signal.throwIfAborted()
      return 'slept'
    },
  }),
  defineTool({ name: 'guarded', description: 'needs approval', parameters: z.object({}), execute: () => 'done' }),
  defineTool({ name: 'weird', description: 'returns output that is not JSON', parameters: z.object({}), execute: () => ({ content: 'w', meta: { n: 1n } }) as never }),
]

async function runScenario(steps: ScriptStep[], followups: number, faults: Faults, invariant: boolean): Promise<void> {
  const approver = async ({ signal }: { signal: AbortSignal }): Promise<'yes' | 'no'> => {
    if (faults.approver === 'yes' || faults.approver === 'no') return faults.approver
    if (faults.approver === 'throw') throw new Error('approver broke')
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('prompt closed')), { once: true }))
  }
  const storeFails = once(faults.storeFail)
  const f = await loopFixture((_req, index) => steps[index % steps.length] as ScriptStep, {
    tools,
    invariant,
    store: faultyStore(storeFails),
    plugins: [permissionPlugin({ rules: { allow: ['echo', 'slow', 'weird', 'missing'], ask: ['guarded'] }, ask: approver })],
  })
  let preCalls = 0
  let postCalls = 0
  f.harness.hooks.on('tools/pre-execute', (_p, next) => {
    if (++preCalls === faults.preThrowOnCall) throw new Error('pre-execute broke')
    return next()
  })
  f.harness.hooks.on('tools/post-execute', (_p, next) => {
    if (++postCalls === faults.postThrowOnCall) throw new Error('post-execute broke')
    return next()
  })
  const vetoes = once(faults.veto)
  f.harness.hooks.on('session/validate', ({ event }) => {
    if (vetoes(event)) throw new Error(`vetoed ${event.type}`)
  })
  let published = 0
  f.harness.hooks.on('session/event', () => {
    if (++published === faults.cancelAtEvent) queueMicrotask(() => f.agent.cancel())
  })
  // The loop has no built-in budget (policy lives in plugins): cap endless tool loops by cancelling.
  let stepsSeen = 0
  f.harness.hooks.on('agent/pre-step', ({ agent }, next) => {
    if (++stepsSeen % 12 === 0) agent.cancel({ kind: 'hook', reason: 'step cap' })
    return next()
  })

  for (let turn = 0; turn < followups; turn++) {
    f.agent.followup(`turn ${turn}`)
    // A hanging model or a pending approval only ends by cancel.
    for (let i = 0; i < 100 && f.agent.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 1))
      if (i % 10 === 9) f.agent.cancel()
    }
    await f.agent.whenIdle()
    checkLog(f.agent.session.events)
  }
  for (const [i, request] of f.model.requests.entries()) {
    expect(openAiChatRuleProblem(request.messages), `request ${i}`).toBeUndefined()
  }
  await f.harness.close()
}

function checkLog(events: readonly SessionEvent[]): void {
  expect(verifySessionLog(events).problems).toEqual([])
  const made = events
    .filter((e) => e.type === 'assistant/message')
    .flatMap((e) => (e.data as { message: { content: { type: string; id?: string }[] } }).message.content.flatMap((b) => (b.type === 'tool-call' ? [b.id as string] : [])))
  const answered = events.filter((e) => e.type === 'tool/result').map((e) => (e.data as { message: { source: { callId: string } } }).message.source.callId)
  const called = events.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId)
  expect([...answered].sort()).toEqual([...made].sort())
  expect(called.every((id) => answered.filter((a) => a === id).length === 1)).toBe(true)
  expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(events.filter((e) => e.type === 'turn/start').length)
}

/** A scenario that never settles is a hang: fail it (so fast-check shrinks and reports it) instead of waiting. */
async function settlesWithin<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the scenario did not settle within ${ms} ms (a hang: whenIdle or close never resolved)`)), ms)
  })
  try {
    return await Promise.race([work, hung])
  } finally {
    clearTimeout(timer)
  }
}

describe('LOOP-HARDENING property: random scripts × random failure injection', () => {
  for (const invariant of [false, true]) {
    it(`every tool call answered once, every turn closed once, every request valid for OpenAI (invariantPlugin ${invariant ? 'on' : 'off'})`, { timeout: 300_000, retry: 1 }, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 4 }), faultsArb, (steps, followups, faults) =>
          settlesWithin(20_000, runScenario(steps, followups, faults, invariant)),
        ),
        // A fixed seed keeps CI's inputs the same from run to run; FAULT_PROPERTY_SEED explores others.
        { numRuns: Number(process.env.FAULT_PROPERTY_RUNS ?? 50), seed: Number(process.env.FAULT_PROPERTY_SEED ?? 20261201) },
      )
      // About 3 s on a quiet 2-core machine; the bound leaves room for a heavily loaded one (timer-driven waits).
      // One retry: a rare scenario has hung in a full-suite run and not reproduced alone (under investigation).
    })
  }
})
