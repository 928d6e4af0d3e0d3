import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { z } from 'zod'
import { defineTool, HarnessError, permissionPlugin, verifySessionLog, type ScriptStep, type SessionEvent, type SessionStore, type SessionWriter, type TurnEndReason } from '../../src/index.js'
import { closerEventsOfLog } from '../../src/session/repair.js'
import { eventLogOf } from '../../src/session/event-log.js'
import type { Session } from '../../src/session/session.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { faultyStore, flushFaultStore, openAiChatRuleProblem } from '../support/faults.js'

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
  // 'never' ignores the signal and never answers: only the loop's own abort handling ends that question.
  approver: fc.constantFrom('yes', 'throw', 'reject-on-abort', 'no', 'never', 'slow-yes'),
  veto: fc.option(fc.record({ type: fc.constantFrom(...VETOABLE), nth: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
  storeFail: fc.option(fc.record({ type: fc.constantFrom(...VETOABLE), nth: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
  /**
   * The store's nth flush fails (counted over every flush: before a tool body, at turn/end, at close, at a
   * resume's repair): `once` (a disk that recovers: the batch is retried by the next flush) or `on` (a disk
   * that stays broken, like fsync failing from then on).
   */
  flushFail: fc.option(fc.record({ nth: fc.integer({ min: 1, max: 10 }), mode: fc.constantFrom('once', 'on') }), { nil: undefined }),
  cancelAtEvent: fc.option(fc.integer({ min: 2, max: 80 }), { nil: undefined }),
  /** How the cancel at `cancelAtEvent` is scheduled; `keep` is a hook cancel that keeps the inbox (like a budget). */
  cancelMode: fc.constantFrom('microtask', 'immediate', 'timeout', 'keep'),
  /** A followup sent mid-run (from a microtask after that event): reaches the driver in whatever state it is. */
  followupAtEvent: fc.option(fc.integer({ min: 2, max: 120 }), { nil: undefined }),
  /** `harness.close()` mid-run (dispose racing a turn). */
  closeAtEvent: fc.option(fc.integer({ min: 2, max: 120 }), { nil: undefined }),
  /** Seeds the small random delays in the store's flush, the tool hooks and a slow approver. */
  timing: fc.integer({ min: 1, max: 2 ** 30 }),
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

/**
 * A pause of random kind from a seeded generator: none, a microtask, a macrotask or a 0–2 ms timer. Moves the
 * loop's await points against each other (a hang found under CPU load came from such an interleaving).
 */
function delays(seed: number): () => Promise<void> {
  let state = seed
  const next = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
  return async () => {
    const r = next()
    if (r < 0.4) return
    if (r < 0.6) await Promise.resolve()
    else if (r < 0.8) await new Promise((resolve) => setImmediate(resolve))
    else await new Promise((resolve) => setTimeout(resolve, Math.floor(next() * 3)))
  }
}

/** The store with a pause before every flush and close (a disk that is sometimes slow). */
function slowed(store: SessionStore, delay: () => Promise<void>): SessionStore {
  const wrap = (writer: SessionWriter): SessionWriter => ({
    append: (event) => writer.append(event),
    flush: async () => {
      await delay()
      await writer.flush()
    },
    close: async () => {
      await delay()
      await writer.close()
    },
  })
  return {
    ...store,
    create: async (header, seed) => wrap(await store.create(header, seed)),
    open: async (id) => {
      const opened = await store.open(id)
      return { ...opened, writer: wrap(opened.writer) }
    },
  }
}

async function runScenario(steps: ScriptStep[], followups: number, faults: Faults, invariant: boolean): Promise<void> {
  const delay = delays(faults.timing)
  // A prompt that closes on abort listens only for an abort still to come (as many do): the loop must not ask
  // it for a turn already cancelled.
  const approver = async ({ signal }: { signal: AbortSignal }): Promise<'yes' | 'no'> => {
    if (faults.approver === 'yes' || faults.approver === 'no') return faults.approver
    if (faults.approver === 'throw') throw new Error('approver broke')
    if (faults.approver === 'never') return new Promise(() => {})
    if (faults.approver === 'slow-yes') {
      await delay()
      return 'yes'
    }
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('prompt closed')), { once: true }))
  }
  const storeFails = once(faults.storeFail)
  const flushFail = faults.flushFail
  const disk = flushFaultStore((n) => flushFail !== undefined && (flushFail.mode === 'once' ? n === flushFail.nth : n >= flushFail.nth))
  const f = await loopFixture((_req, index) => steps[index % steps.length] as ScriptStep, {
    tools,
    invariant,
    store: slowed(faultyStore(storeFails, disk), delay),
    plugins: [permissionPlugin({ rules: { allow: ['echo', 'slow', 'weird', 'missing'], ask: ['guarded'] }, ask: approver })],
  })
  let preCalls = 0
  let postCalls = 0
  f.harness.hooks.on('tools/pre-execute', (_p, next) => {
    if (++preCalls === faults.preThrowOnCall) throw new Error('pre-execute broke')
    return delay().then(() => next())
  })
  f.harness.hooks.on('tools/post-execute', (_p, next) => {
    if (++postCalls === faults.postThrowOnCall) throw new Error('post-execute broke')
    return delay().then(() => next())
  })
  const vetoes = once(faults.veto)
  f.harness.hooks.on('session/validate', ({ event }) => {
    if (vetoes(event)) throw new Error(`vetoed ${event.type}`)
  })
  let published = 0
  let closing: Promise<void> | undefined
  const session = f.agent.session
  // After a failed turn-end flush the session refuses appends (a cancel's inbox splice, a followup): expected then.
  const refusedOrThrow = (error: unknown): void => {
    if (!(error instanceof HarnessError) || session.writeFailure === undefined) throw error
  }
  const cancel = (): void => {
    if (closing !== undefined) return
    try {
      f.agent.cancel()
    } catch (error) {
      refusedOrThrow(error)
    }
  }
  // The property this store adds: a turn is reported `completed` (to a session/event listener) only when its
  // turn/end is already in what the store persisted. Listener failures are contained, so collect, then assert.
  const undurable: string[] = []
  f.harness.hooks.on('session/event', ({ event }) => {
    if (event.type === 'turn/end' && reasonOf(event).kind === 'completed' && event.seq >= disk.durableLength(session.id)) {
      undurable.push(`turn/end seq ${event.seq} reported completed with ${disk.durableLength(session.id)} events durable`)
    }
  })
  f.harness.hooks.on('session/event', () => {
    ++published
    if (published === faults.cancelAtEvent) {
      if (faults.cancelMode === 'microtask') queueMicrotask(cancel)
      else if (faults.cancelMode === 'immediate') setImmediate(cancel)
      else if (faults.cancelMode === 'timeout') setTimeout(cancel, 0)
      else queueMicrotask(() => f.agent.cancel({ kind: 'hook', reason: 'keeps the inbox' }, { keepInbox: true }))
    }
    if (published === faults.followupAtEvent) {
      queueMicrotask(() => {
        try {
          if (closing === undefined) f.agent.followup('extra')
        } catch (error) {
          refusedOrThrow(error)
        }
      })
    }
    // Awaited only once the run notices it: a rejection (a failed flush) must not count as unhandled meanwhile.
    if (published === faults.closeAtEvent) queueMicrotask(() => (closing ??= handledLater(f.harness.close())))
  })
  // The loop has no built-in budget (policy lives in plugins): cap endless tool loops by cancelling.
  let stepsSeen = 0
  f.harness.hooks.on('agent/pre-step', ({ agent }, next) => {
    if (++stepsSeen % 12 === 0) agent.cancel({ kind: 'hook', reason: 'step cap' })
    return next()
  })

  for (let turn = 0; turn < followups && closing === undefined && session.writeFailure === undefined; turn++) {
    try {
      f.agent.followup(`turn ${turn}`)
    } catch (error) {
      refusedOrThrow(error)
      break
    }
    // A hanging model or a pending approval only ends by cancel.
    for (let i = 0; i < 100 && f.agent.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 1))
      if (i % 10 === 9) cancel()
    }
    await f.agent.whenIdle()
    if (closing === undefined) checkLog(f.agent.session.events)
  }
  if (closing !== undefined) {
    // Closed mid-run: the close settles, and what it left is a valid, balanced log.
    await settleClose(closing, disk)
    checkLog(f.agent.session.events)
    checkDurability(session, disk, undurable, await disk.read(session.id))
    return
  }
  for (const [i, request] of f.model.requests.entries()) {
    expect(openAiChatRuleProblem(request.messages), `request ${i}`).toBeUndefined()
  }
  // A cancel still scheduled (immediate, timeout) finds `closing` set and stays away from the closed session.
  closing = f.harness.close()
  await settleClose(closing, disk)
  checkDurability(session, disk, undurable, await disk.read(session.id))
}

/** The same promise, marked handled: its rejection is looked at later (see {@link settleClose}). */
function handledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {})
  return promise
}

function reasonOf(event: SessionEvent): TurnEndReason {
  return (event.data as { reason: TurnEndReason }).reason
}

/** `harness.close()` resolves, or rejects with the store's write failure when a flush was made to fail. */
async function settleClose(closing: Promise<void>, disk: { readonly failedFlushes: number }): Promise<void> {
  try {
    await closing
  } catch (error) {
    expect(disk.failedFlushes, `close() rejected with no flush failed: ${String(error)}`).toBeGreaterThan(0)
    expect((error as HarnessError).code).toBe('SESSION_WRITE_FAILED')
  }
}

/**
 * No turn reported `completed` unless its turn/end is durable: none heard by a listener before its flush, none in
 * the session's log that the store lacks (with the same reason); and what the store persisted, closed by crash
 * repair as the next open would close it, is a valid log.
 */
function checkDurability(session: Session, disk: { durableLength(id: string): number }, undurable: readonly string[], persisted: { events: readonly SessionEvent[] }): void {
  expect(undurable).toEqual([])
  const stored = persisted.events
  expect(stored.length).toBe(disk.durableLength(session.id))
  for (const end of session.events.filter((e) => e.type === 'turn/end' && reasonOf(e).kind === 'completed')) {
    const kept = stored[end.seq]
    expect(kept?.type, `completed turn/end seq ${end.seq} is not in the store`).toBe('turn/end')
    expect(reasonOf(kept as SessionEvent)).toEqual({ kind: 'completed' })
  }
  const repaired = [...stored, ...closerEventsOfLog(eventLogOf(stored))]
  expect(verifySessionLog(repaired).problems).toEqual([])
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
    it(`every tool call answered once, every turn closed once, every request valid for OpenAI, no turn reported completed before its turn/end is durable (invariantPlugin ${invariant ? 'on' : 'off'})`, { timeout: 300_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 4 }), faultsArb, (steps, followups, faults) =>
          settlesWithin(20_000, runScenario(steps, followups, faults, invariant)),
        ),
        // A fixed seed keeps CI's inputs the same from run to run; FAULT_PROPERTY_SEED explores others.
        { numRuns: Number(process.env.FAULT_PROPERTY_RUNS ?? 100), seed: Number(process.env.FAULT_PROPERTY_SEED ?? 20261201) },
      )
      // A few seconds on a quiet 2-core machine; the bound leaves room for a heavily loaded one (timer-driven waits).
      // FAULT_PROPERTY_RUNS runs more scenarios. The hang once seen under load (an approver asked for a turn
      // already cancelled; approval-cancel.test.ts) showed within 1000 runs on 3 of 7 seeds, never within 50;
      // the never-answering approver makes this seed find it within 100 (run 73).
    })
  }
})
