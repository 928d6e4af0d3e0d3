import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { MemoryStore, retryPlugin, telemetryPlugin, traceSession, verifySessionLog } from '../../src/index.js'
import { loopFixture } from '../support/loop-fixture.js'
import { expectedSpans, fromReadable, runTelemetrySession, type PlainSpan } from './telemetry-session.js'

function inMemory(): { provider: BasicTracerProvider; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter()
  return { exporter, provider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }) }
}

const withoutTimes = (spans: PlainSpan[]) => spans.map(({ start: _s, end: _e, ...rest }) => rest)

describe('telemetryPlugin', () => {
  it('TELEMETRY-TREE: a retry, two tool calls and a cancel give the expected invoke_agent / chat / execute_tool spans', async () => {
    const { provider, exporter } = inMemory()
    const { agent, close } = await runTelemetrySession({ plugins: [telemetryPlugin({ tracerProvider: provider })] })
    expect(verifySessionLog(agent.session.events).problems).toEqual([])
    const spans = fromReadable(exporter.getFinishedSpans())
    expect(withoutTimes(spans)).toEqual(expectedSpans(agent.id))
    // Each turn is its own trace; children lie inside their turn's time range.
    const roots = exporter.getFinishedSpans().filter((s) => s.parentSpanContext === undefined)
    expect(new Set(roots.map((s) => s.spanContext().traceId)).size).toBe(2)
    for (const span of spans) {
      expect(span.end).toBeGreaterThanOrEqual(span.start)
      if (span.parent !== undefined) {
        const parent = spans[Number(span.parent)] as PlainSpan
        expect(span.start).toBeGreaterThanOrEqual(parent.start)
        expect(span.end).toBeLessThanOrEqual(parent.end)
      }
    }
    // The retried attempt starts after the failed one ended.
    expect((spans[2] as PlainSpan).start).toBeGreaterThanOrEqual((spans[1] as PlainSpan).end)
    // Without captureContent nothing the user or the model wrote reaches a span.
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toMatch(/secret|Use the echo|gen_ai\.(input|output)\.messages/)
    await close()
  })

  it('TELEMETRY-CONTENT: captureContent records messages, system prompt, tool arguments and results', async () => {
    const { provider, exporter } = inMemory()
    const { close } = await runTelemetrySession({ plugins: [telemetryPlugin({ tracerProvider: provider, captureContent: true })] })
    const spans = exporter.getFinishedSpans()
    const chat = spans.find((s) => s.name === 'chat m1' && s.attributes['ledgerloop.step'] === 2)
    const input = JSON.parse(String(chat?.attributes['gen_ai.input.messages'])) as { role: string; parts: { type: string }[] }[]
    expect(input[0]).toEqual({ role: 'user', parts: [{ type: 'text', content: 'Use the echo tool twice.' }] })
    expect(input.map((m) => m.parts[0]?.type)).toEqual(['text', 'text', 'tool_call_response', 'tool_call_response'])
    expect(JSON.parse(String(chat?.attributes['gen_ai.output.messages']))).toEqual([{ role: 'assistant', parts: [{ type: 'text', content: 'All done with secret-answer.' }] }])
    const tool = spans.find((s) => s.attributes['gen_ai.tool.call.id'] === 'call-a')
    expect(tool?.attributes['gen_ai.tool.call.arguments']).toBe('{"text":"secret-a"}')
    expect(JSON.parse(String(tool?.attributes['gen_ai.tool.call.result']))).toEqual([{ type: 'text', content: 'echo secret-a' }])
    await close()
  })

  it('TELEMETRY-REPLAY: traceSession over the stored log yields the same spans, times included; a fork adds none of its parent’s', async () => {
    const live = inMemory()
    const store = new MemoryStore()
    const { agent, harness, close } = await runTelemetrySession({ store, plugins: [telemetryPlugin({ tracerProvider: live.provider })] })
    const forkId = await harness.forkSession(agent.id)
    await close()
    const later = inMemory()
    const stored = await store.read(agent.id)
    traceSession(agent.id, stored.events, { tracerProvider: later.provider })
    expect(fromReadable(later.exporter.getFinishedSpans())).toEqual(fromReadable(live.exporter.getFinishedSpans()))
    const forked = inMemory()
    traceSession(forkId, (await store.read(forkId)).events, { tracerProvider: forked.provider })
    expect(forked.exporter.getFinishedSpans()).toEqual([])
  })
})

describe('telemetryPlugin edge cases', () => {
  it('a request cancelled before any output is a chat span with error.type aborted; a failed turn carries the failure code', async () => {
    const { provider, exporter } = inMemory()
    const f = await loopFixture([{ hang: true }, { error: { code: 'AUTH', message: 'bad key', status: 401 } }], {
      plugins: [telemetryPlugin({ tracerProvider: provider })],
    })
    f.agent.followup('first')
    await new Promise((r) => setTimeout(r, 50))
    f.agent.cancel()
    await f.agent.whenIdle()
    f.agent.followup('second')
    await f.agent.whenIdle()
    const spans = fromReadable(exporter.getFinishedSpans()).map((s) => ({ name: s.name, parent: s.parent, status: s.status, error: s.attributes['error.type'], reason: s.attributes['ledgerloop.turn.end_reason'] }))
    expect(spans).toEqual([
      { name: 'invoke_agent ledgerloop', parent: undefined, status: { code: 'ERROR', message: 'aborted (user)' }, error: 'aborted', reason: 'aborted' },
      { name: 'chat m1', parent: '0', status: { code: 'ERROR', message: 'aborted (user)' }, error: 'aborted', reason: undefined },
      { name: 'invoke_agent ledgerloop', parent: undefined, status: { code: 'ERROR', message: 'AUTH: bad key' }, error: 'AUTH', reason: 'error' },
      { name: 'chat m1', parent: '2', status: { code: 'ERROR', message: 'AUTH: bad key' }, error: 'AUTH', reason: undefined },
    ])
  })

  it('a retried request cancelled before any output still gets its own chat span (attempt 2)', async () => {
    const { provider, exporter } = inMemory()
    const f = await loopFixture([{ error: { code: 'RATE_LIMIT', message: 'slow down', status: 429 } }, { hang: true }], {
      plugins: [retryPlugin({ baseDelayMs: 1, jitterRatio: 0 }), telemetryPlugin({ tracerProvider: provider })],
    })
    f.agent.followup('go')
    while (f.model.requests.length < 2) await new Promise((r) => setTimeout(r, 10))
    f.agent.cancel()
    await f.agent.whenIdle()
    const chats = fromReadable(exporter.getFinishedSpans())
      .filter((s) => s.name === 'chat m1')
      .map((s) => [s.attributes['ledgerloop.request.attempt'], s.attributes['error.type']])
    expect(chats).toEqual([
      [1, 'RATE_LIMIT'],
      [2, 'aborted'],
    ])
  })

  it('telemetry writes nothing to the log: the same session with and without it has the same event types', async () => {
    const { provider } = inMemory()
    const traced = await runTelemetrySession({ plugins: [telemetryPlugin({ tracerProvider: provider })] })
    const plain = await runTelemetrySession({})
    expect(traced.agent.session.events.map((e) => e.type)).toEqual(plain.agent.session.events.map((e) => e.type))
    await traced.close()
    await plain.close()
  })
  it('a turn whose model reported no usage leaves the token counts out instead of saying 0', async () => {
    const { provider, exporter } = inMemory()
    const f = await loopFixture([{ text: 'no usage here' }, { text: 'counted', usage: { inputTokens: 7, outputTokens: 3 } }], {
      plugins: [telemetryPlugin({ tracerProvider: provider })],
    })
    for (const prompt of ['first', 'second']) {
      f.agent.followup(prompt)
      await f.agent.whenIdle()
    }
    const usage = fromReadable(exporter.getFinishedSpans()).map((s) => [s.name, s.attributes['gen_ai.usage.input_tokens'], s.attributes['gen_ai.usage.output_tokens']])
    expect(usage).toEqual([
      ['invoke_agent ledgerloop', undefined, undefined],
      ['chat m1', undefined, undefined],
      ['invoke_agent ledgerloop', 7, 3],
      ['chat m1', 7, 3],
    ])
  })
})
