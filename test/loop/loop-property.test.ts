import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { verifySessionLog, type ScriptStep } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

const stepArb: fc.Arbitrary<ScriptStep> = fc.oneof(
  fc.record({ text: fc.array(fc.string({ maxLength: 5 }), { minLength: 1, maxLength: 4 }) }),
  fc.record({ text: fc.constant('calling'), toolCalls: fc.constant([{ name: 'echo', arguments: { text: 't' } }]) }),
  fc.record({ text: fc.constant('cut'), toolCalls: fc.constant([{ name: 'echo', arguments: { text: 'm' } }]), finish: fc.constant('max-tokens' as const) }),
  fc.record({ error: fc.record({ code: fc.constantFrom('SERVER', 'AUTH', 'RATE_LIMIT') }) }),
  fc.constant({ hang: true as const }),
  fc.record({ text: fc.constant(['slow', ' stream']), delayMs: fc.constant(1) }),
)

const opArb = fc.oneof(
  fc.record({ op: fc.constant('followup' as const) }),
  fc.record({ op: fc.constant('steer' as const) }),
  fc.record({ op: fc.constant('inject' as const) }),
  fc.record({ op: fc.constant('cancel' as const), keepInbox: fc.boolean() }),
  fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 4 }) }),
)

describe('loop property: random interleavings of input, cancel and scripts', () => {
  it('the log grammar holds, every turn and step closes once, every request reconstructs, whenIdle resolves', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 12 }), fc.array(opArb, { minLength: 1, maxLength: 12 }), async (steps, ops) => {
        const f = await loopFixture((_req, index) => steps[index % steps.length] as ScriptStep, { tools: [echoTool([], { concurrencySafe: true })] })
        // The loop has no built-in budget (policy lives in plugins): a script of only tool calls would run forever
        // in microtasks, so cap it the way a budget plugin would, by cancelling.
        let stepsSeen = 0
        f.harness.hooks.on('agent/pre-step', ({ agent }, next) => {
          if (++stepsSeen > 40) agent.cancel({ kind: 'hook', reason: 'step cap' }, { keepInbox: true })
          return next()
        })
        for (const op of ops) {
          if (op.op === 'followup') f.agent.followup('f')
          else if (op.op === 'steer') f.agent.steer('s')
          else if (op.op === 'inject') f.agent.inject('i')
          else if (op.op === 'cancel') f.agent.cancel({ kind: 'user' }, { keepInbox: op.keepInbox })
          else await new Promise((r) => setTimeout(r, op.ms))
        }
        // Drive to idle: a hanging model only ends by cancel; an endless tool loop is cut the same way.
        for (let i = 0; i < 200 && f.agent.status === 'running'; i++) {
          await new Promise((r) => setTimeout(r, 2))
          if (i % 5 === 4) f.agent.cancel()
        }
        await f.agent.whenIdle()
        const events = f.agent.session.events
        const verdict = verifySessionLog(events)
        expect(verdict.problems).toEqual([])
        const starts = events.filter((e) => e.type === 'turn/start').length
        expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(starts)
        expect(events.filter((e) => e.type === 'step/end')).toHaveLength(events.filter((e) => e.type === 'step/start').length)
        // The invariant plugin would have failed a turn with INVARIANT on any reconstruction desync.
        expect(JSON.stringify(f.turnEnds())).not.toContain('INVARIANT')
        expect(f.agent.status).toBe('idle')
        await f.harness.close()
      }),
      { numRuns: 50 },
    )
  }, 60_000)
})
