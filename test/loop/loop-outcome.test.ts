import { describe, expect, it } from 'vitest'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { INTERRUPTED_MARKER, projectSurfaceEvent } from '../../src/session/surface.js'
import type { SessionEvent } from '../../src/session/events.js'
import { recordedRequests } from '../../src/views/recorded-requests.js'

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms))

describe('LOOP-OUTCOME-TEST', () => {
  it('completed: a normal stop', async () => {
    const f = await loopFixture([{ text: 'ok' }])
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
  })

  it('max-tokens: truncated tool calls are never dispatched and the reason is sticky within the turn only', async () => {
    const calls: unknown[] = []
    const f = await loopFixture(
      [
        { text: 'partial', toolCalls: [{ name: 'echo', arguments: { text: 'cut' } }], finish: 'max-tokens' },
        { text: 'continued' },
        { text: 'next turn' },
      ],
      { tools: [echoTool(calls)] },
    )
    // A turn-stopping listener forces one more step after the truncated one.
    let forced = false
    f.harness.hooks.on('agent/turn-stopping', ({ agent }) => {
      if (!forced) {
        forced = true
        agent.steer('please continue')
      }
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(calls).toEqual([])
    expect(f.ofType('tool/call')).toEqual([])
    const anchor = f.ofType('assistant/message')[0]?.data as { message: { content: { type: string }[] } }
    expect(anchor.message.content.map((b) => b.type)).toEqual(['text'])
    expect(f.ofType('step/start')).toHaveLength(2)
    expect(f.turnEnds()).toEqual([{ kind: 'max-tokens' }])
    f.agent.followup('again')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'max-tokens' }, { kind: 'completed' }])
  })

  it('blocked: a rejecting pre-step ends the turn with no step and no request', async () => {
    const f = await loopFixture([{ text: 'never' }])
    f.harness.hooks.on('agent/pre-step', () => ({ kind: 'reject' }))
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.boundaries()).toEqual(['turn/start', 'turn/end'])
    expect(f.turnEnds()).toEqual([{ kind: 'blocked' }])
    expect(f.model.requests).toHaveLength(0)
  })

  it('aborted: cancel during a hanging request records the first cause', async () => {
    const f = await loopFixture([{ hang: true }])
    f.agent.followup('hi')
    await tick()
    f.agent.cancel({ kind: 'hook', reason: 'budget' })
    f.agent.cancel({ kind: 'user' })
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'budget' } }])
    expect(f.boundaries().slice(-2)).toEqual(['step/end', 'turn/end'])
    expect(f.errors).toEqual([])
  })

  it('error: an unrecovered provider failure keeps its structured failure', async () => {
    const f = await loopFixture([{ error: { code: 'RATE_LIMIT', message: 'slow down', status: 429, retryAfterMs: 1500 } }])
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'error', error: { message: 'slow down', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500 } }])
    expect(f.errors).toHaveLength(1)
    expect(f.agent.status).toBe('idle')
  })

  it('interrupted anchor: cancel mid-stream keeps the text the user already saw in history', async () => {
    const f = await loopFixture([{ text: ['Hello ', 'wor', 'ld', '!'], delayMs: 2 }, { text: 'after' }])
    // Cancel right after the second text delta is logged (deterministic, unlike a timer).
    f.harness.hooks.on('session/event', ({ event }) => {
      const chunk = (event.data as { chunk?: { type: string; text?: string } }).chunk
      if (chunk?.type === 'text-delta' && chunk.text === 'wor') queueMicrotask(() => f.agent.cancel())
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    const anchor = f.ofType('assistant/message')[0]
    const data = anchor?.data as { interrupted?: boolean; message: { content: { type: string; text: string }[] } }
    expect(data.interrupted).toBe(true)
    expect(data.message.content).toEqual([{ type: 'text', text: 'Hello wor' }])
    // Exactly the chunks streamed before the cancel: block-start, 'Hello ', 'wor' — no more, no fewer.
    const streamed = f.ofType('assistant/chunk').map((e) => e.seq)
    expect(streamed).toHaveLength(3)
    expect(anchor?.sourceEventSeqs).toEqual(streamed)
    f.agent.followup('again')
    await f.agent.whenIdle()
    const roles = f.model.requests[1]?.messages.map((m) => m.role)
    expect(roles).toEqual(['user', 'assistant', 'user'])
  })

  it('interrupted anchor: the next request tells the model the partial answer was cut off, as a rebuild from the log does', async () => {
    const f = await loopFixture([{ text: ['Hello ', 'wor', 'ld', '!'], delayMs: 2 }, { text: 'after' }])
    f.harness.hooks.on('session/event', ({ event }) => {
      const chunk = (event.data as { chunk?: { type: string; text?: string } }).chunk
      if (chunk?.type === 'text-delta' && chunk.text === 'wor') queueMicrotask(() => f.agent.cancel())
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    f.agent.followup('again')
    await f.agent.whenIdle()
    const partial = f.model.requests[1]?.messages[1]
    expect(partial?.role).toBe('assistant')
    expect(partial?.content).toEqual([
      { type: 'text', text: 'Hello wor' },
      { type: 'text', text: INTERRUPTED_MARKER },
    ])
    // The message in the log keeps what streamed; the note beside it is what the fold appends.
    const anchor = f.ofType('assistant/message')[0] as SessionEvent
    const data = anchor.data as { message: { content: unknown[] }; note?: string }
    expect(data.message.content).toEqual([{ type: 'text', text: 'Hello wor' }])
    expect(data.note).toBe(INTERRUPTED_MARKER)
    // An anchor logged before notes existed was sent without a marker, and is rebuilt without one.
    const { note: _note, ...older } = anchor.data as Record<string, unknown>
    expect(projectSurfaceEvent({ ...anchor, data: older } as unknown as SessionEvent)?.content).toEqual([{ type: 'text', text: 'Hello wor' }])
    // The request rebuilt from the log alone carries the same marked history the loop sent.
    const rebuilt = recordedRequests(f.agent.session.events)
    expect(rebuilt).toHaveLength(2)
    expect(JSON.stringify(rebuilt[1]?.history.messages.slice(0, rebuilt[1].history.length))).toBe(JSON.stringify(f.model.requests[1]?.messages))
  })
})
