import { describe, expect, it } from 'vitest'
import { retryPlugin } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms))

describe('LOOP-REQUEST-ERROR-TEST', () => {
  it('retry happens in the same step; the failed attempt is never cited; no tool runs twice', async () => {
    const calls: unknown[] = []
    const f = await loopFixture([{ text: ['par', 'tial'], toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'a' } }], finish: 'tool-calls' }, { text: 'answer' }], {
      tools: [echoTool(calls)],
    })
    // The first attempt streams the whole tool call, then fails in-band: a loop that ran the calls of a
    // failed attempt would run echo twice (once for the failed attempt, once for the retry).
    let failedOnce = false
    f.harness.hooks.on('llm/stream', async (request, next) => {
      if (!failedOnce) {
        failedOnce = true
        return (async function* () {
          yield { type: 'block-start' as const, index: 0, blockType: 'tool-call' as const }
          yield { type: 'tool-call-delta' as const, index: 0, id: 'c1', name: 'echo', argumentsDelta: '{"text":"a"}' }
          yield { type: 'block-end' as const, index: 0, block: { type: 'tool-call' as const, id: 'c1', name: 'echo', arguments: '{"text":"a"}' } }
          yield { type: 'finish' as const, reason: { kind: 'error' as const, failure: { code: 'SERVER', message: 'boom' } } }
        })()
      }
      return next(request)
    })
    let seen = 0
    f.harness.hooks.on('agent/request-error', ({ step, attempt }) => {
      seen++
      expect(step).toBe(1)
      expect(attempt).toBe(1)
      return { kind: 'retry' }
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(seen).toBe(1)
    expect(calls).toEqual(['a'])
    expect(f.ofType('tool/call')).toHaveLength(1)
    expect(f.ofType('step/start')).toHaveLength(2)
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    const chunkSeqs = f.ofType('assistant/chunk').map((e) => e.seq)
    const cited = new Set(f.ofType('assistant/message').flatMap((e) => e.sourceEventSeqs ?? []))
    const uncited = chunkSeqs.filter((s) => !cited.has(s))
    expect(uncited).toEqual(chunkSeqs.slice(0, 4)) // the failed attempt's four chunks, and only those
    const answer = f.ofType('assistant/message')[1]?.data as { message: { content: { text: string }[] } }
    expect(answer.message.content[0]?.text).toBe('answer')
  })

  it('retryPlugin: 429 with Retry-After, then success; one llm/retry event with the delay', async () => {
    const f = await loopFixture([{ error: { code: 'RATE_LIMIT', status: 429, retryAfterMs: 20 } }, { text: 'fine' }], {
      plugins: [retryPlugin({ baseDelayMs: 1, maxDelayMs: 50, random: () => 0 })],
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    const retries = f.ofType('llm/retry').map((e) => e.data)
    expect(retries).toEqual([{ turn: 1, step: 1, attempt: 1, code: 'RATE_LIMIT', message: 'scripted failure RATE_LIMIT', delayMs: 20, providerRetryAfterMs: 20 }])
  })

  it('retryPlugin gives up after maxAttempts and does not retry non-retryable codes', async () => {
    const f = await loopFixture([{ error: { code: 'SERVER' } }, { error: { code: 'SERVER' } }, { error: { code: 'SERVER' } }], {
      plugins: [retryPlugin({ maxAttempts: 2, baseDelayMs: 1 })],
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.model.requests).toHaveLength(2)
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'SERVER' } }])
    const g = await loopFixture([{ error: { code: 'AUTH' } }], { plugins: [retryPlugin({ baseDelayMs: 1 })] })
    g.agent.followup('hi')
    await g.agent.whenIdle()
    expect(g.model.requests).toHaveLength(1)
    expect(g.ofType('llm/retry')).toHaveLength(0)
  })

  it('cancel wins: a listener that cancels and returns retry ends the turn aborted', async () => {
    const f = await loopFixture([{ error: { code: 'SERVER' } }, { text: 'never' }])
    f.harness.hooks.on('agent/request-error', ({ agent }) => {
      agent.cancel({ kind: 'user' })
      return { kind: 'retry' }
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.model.requests).toHaveLength(1)
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
  })

  it('cancel during the retry wait aborts the wait', async () => {
    const f = await loopFixture([{ error: { code: 'SERVER' } }, { text: 'never' }], { plugins: [retryPlugin({ baseDelayMs: 10_000, maxDelayMs: 10_000 })] })
    f.agent.followup('hi')
    await tick(20)
    const started = Date.now()
    f.agent.cancel()
    await f.agent.whenIdle()
    expect(Date.now() - started).toBeLessThan(1000)
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
  })

  it('a throwing recovery listener ends the turn error with its message', async () => {
    const f = await loopFixture([{ error: { code: 'SERVER' } }])
    f.harness.hooks.on('agent/request-error', () => {
      throw new Error('recovery broke')
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'UNKNOWN' } }])
    expect(JSON.stringify(f.turnEnds())).toContain('recovery broke')
  })

  it('agent/request middleware failures bypass recovery', async () => {
    const f = await loopFixture([{ text: 'never' }])
    let offered = false
    f.harness.hooks.on('agent/request', () => {
      throw new Error('middleware broke')
    })
    f.harness.hooks.on('agent/request-error', () => {
      offered = true
      return { kind: 'retry' }
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(offered).toBe(false)
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'UNKNOWN' } }])
  })
})
