import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { z } from 'zod'
import { createHarness, defineTool, invariantPlugin, retryPlugin, scriptedAdapter, type Agent, type Harness, type HarnessOptions } from '../../src/index.js'

/** One span in a shape both the in-memory exporter and an OTLP/JSON body reduce to. */
export interface PlainSpan {
  readonly name: string
  readonly kind: 'internal' | 'client'
  /** Index path of the parent in the list (`undefined` for a root). */
  readonly parent: string | undefined
  readonly start: number
  readonly end: number
  readonly status: { readonly code: 'OK' | 'ERROR' | 'UNSET'; readonly message?: string }
  readonly attributes: Readonly<Record<string, unknown>>
}

// Log order without relying on timestamps (many events share a millisecond): turn, step, chat before tools,
// attempt, call id.
function orderKey(span: Omit<PlainSpan, 'parent'>): (number | string)[] {
  const a = span.attributes
  const op = a['gen_ai.operation.name']
  return [Number(a['ledgerloop.turn']), op === 'invoke_agent' ? -1 : Number(a['ledgerloop.step']), op === 'execute_tool' ? 1 : 0, Number(a['ledgerloop.request.attempt'] ?? 0), String(a['gen_ai.tool.call.id'] ?? '')]
}

function compareKeys(x: (number | string)[], y: (number | string)[]): number {
  for (let i = 0; i < x.length; i++) {
    const a = x[i] as number | string
    const b = y[i] as number | string
    if (a !== b) return a < b ? -1 : 1
  }
  return 0
}

/** Orders spans as the log did and names each parent by its index in that order. */
export function plainSpans(spans: readonly (Omit<PlainSpan, 'parent'> & { id: string; parentId: string | undefined })[]): PlainSpan[] {
  const sorted = [...spans].sort((a, b) => compareKeys(orderKey(a), orderKey(b)))
  const index = new Map(sorted.map((s, i) => [s.id, String(i)]))
  return sorted.map(({ id: _id, parentId, ...rest }) => ({ ...rest, parent: parentId === undefined ? undefined : index.get(parentId) }))
}

/**
 * The acceptance session: turn 1 = a failed request (SERVER) retried, two tool calls, a final answer;
 * turn 2 = a tool call cancelled while it runs.
 */
export async function runTelemetrySession(options: Pick<HarnessOptions, 'plugins' | 'store'>): Promise<{ agent: Agent; harness: Harness; close(): Promise<void> }> {
  const model = scriptedAdapter({
    models: { m1: { contextWindow: 10_000, defaultMaxTokens: 500 } },
    script: [
      { error: { code: 'SERVER', message: 'overloaded', status: 503 } },
      {
        text: 'Looking.',
        toolCalls: [
          { id: 'call-a', name: 'echo', arguments: { text: 'secret-a' } },
          { id: 'call-b', name: 'echo', arguments: { text: 'secret-b' } },
        ],
        usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 60 },
      },
      { text: 'All done with secret-answer.', usage: { inputTokens: 40, outputTokens: 8, cacheReadTokens: 160 } },
      { toolCalls: [{ id: 'call-slow', name: 'slow', arguments: {} }], usage: { inputTokens: 10, outputTokens: 5 } },
    ],
  })
  let started: () => void = () => undefined
  const slowStarted = new Promise<void>((r) => (started = r))
  const echo = defineTool({ name: 'echo', description: 'Echoes', parameters: z.object({ text: z.string() }), execute: ({ text }) => `echo ${text}` })
  const slow = defineTool({
    name: 'slow',
    description: 'Waits until cancelled',
    parameters: z.object({}),
    execute: (_args, { signal }) =>
      new Promise<string>((_resolve, reject) => {
        started()
        signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true })
      }),
  })
  const harness = createHarness({
    ...(options.store !== undefined ? { store: options.store } : {}),
    adapters: [model],
    tools: [echo, slow],
    plugins: [invariantPlugin(), retryPlugin({ baseDelayMs: 5, jitterRatio: 0 }), ...(options.plugins ?? [])],
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', maxTokens: 300 })
  agent.followup('Use the echo tool twice.')
  await agent.whenIdle()
  agent.followup('Now wait.')
  await slowStarted
  agent.cancel()
  await agent.whenIdle()
  return { agent, harness, close: () => harness.close() }
}

/** What the acceptance session must produce, span by span (times excepted). */
export function expectedSpans(sessionId: string): Omit<PlainSpan, 'start' | 'end'>[] {
  const common = { 'gen_ai.conversation.id': sessionId }
  const route = { 'gen_ai.provider.name': 'scripted', 'gen_ai.request.model': 'm1' }
  const chat = (turn: number, step: number, attempt: number) => ({
    'gen_ai.operation.name': 'chat',
    ...route,
    ...common,
    'ledgerloop.turn': turn,
    'ledgerloop.step': step,
    'ledgerloop.request.attempt': attempt,
    'gen_ai.request.max_tokens': 300,
  })
  const tool = (id: string, name: string, turn: number) => ({
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': id,
    'gen_ai.tool.type': 'function',
    ...common,
    'ledgerloop.turn': turn,
    'ledgerloop.step': 1,
  })
  return [
    {
      name: 'invoke_agent ledgerloop',
      kind: 'internal',
      parent: undefined,
      status: { code: 'OK' },
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'ledgerloop',
        ...common,
        'ledgerloop.turn': 1,
        'ledgerloop.turn.end_reason': 'completed',
        ...route,
        'gen_ai.usage.input_tokens': 360,
        'gen_ai.usage.output_tokens': 28,
        'gen_ai.usage.cache_read.input_tokens': 220,
      },
    },
    {
      name: 'chat m1',
      kind: 'client',
      parent: '0',
      status: { code: 'ERROR', message: 'SERVER: overloaded' },
      attributes: { ...chat(1, 1, 1), 'gen_ai.response.finish_reasons': ['error'], 'error.type': 'SERVER' },
    },
    {
      name: 'chat m1',
      kind: 'client',
      parent: '0',
      status: { code: 'OK' },
      attributes: {
        ...chat(1, 1, 2),
        'ledgerloop.retry.delay_ms': 5,
        'gen_ai.response.model': 'm1',
        'gen_ai.response.finish_reasons': ['tool_call'],
        'gen_ai.usage.input_tokens': 160,
        'gen_ai.usage.output_tokens': 20,
        'gen_ai.usage.cache_read.input_tokens': 60,
      },
    },
    { name: 'execute_tool echo', kind: 'internal', parent: '0', status: { code: 'OK' }, attributes: tool('call-a', 'echo', 1) },
    { name: 'execute_tool echo', kind: 'internal', parent: '0', status: { code: 'OK' }, attributes: tool('call-b', 'echo', 1) },
    {
      name: 'chat m1',
      kind: 'client',
      parent: '0',
      status: { code: 'OK' },
      attributes: {
        ...chat(1, 2, 1),
        'gen_ai.response.model': 'm1',
        'gen_ai.response.finish_reasons': ['stop'],
        'gen_ai.usage.input_tokens': 200,
        'gen_ai.usage.output_tokens': 8,
        'gen_ai.usage.cache_read.input_tokens': 160,
      },
    },
    {
      name: 'invoke_agent ledgerloop',
      kind: 'internal',
      parent: undefined,
      status: { code: 'ERROR', message: 'aborted (user)' },
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'ledgerloop',
        ...common,
        'ledgerloop.turn': 2,
        ...route,
        'ledgerloop.turn.end_reason': 'aborted',
        'error.type': 'aborted',
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
      },
    },
    {
      name: 'chat m1',
      kind: 'client',
      parent: '6',
      status: { code: 'OK' },
      attributes: {
        ...chat(2, 1, 1),
        'gen_ai.response.model': 'm1',
        'gen_ai.response.finish_reasons': ['tool_call'],
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 5,
      },
    },
    {
      name: 'execute_tool slow',
      kind: 'internal',
      parent: '6',
      status: { code: 'ERROR', message: 'ABORTED' },
      attributes: { ...tool('call-slow', 'slow', 2), 'error.type': 'ABORTED' },
    },
  ]
}

const ms = (t: [number, number]): number => t[0] * 1000 + t[1] / 1e6

/** The exporter's spans in the shared plain shape. */
export function fromReadable(spans: readonly ReadableSpan[]): PlainSpan[] {
  return plainSpans(
    spans.map((s) => ({
      id: s.spanContext().spanId,
      parentId: s.parentSpanContext?.spanId,
      name: s.name,
      kind: s.kind === SpanKind.CLIENT ? 'client' : 'internal',
      start: ms(s.startTime),
      end: ms(s.endTime),
      status: { code: s.status.code === SpanStatusCode.OK ? 'OK' : s.status.code === SpanStatusCode.ERROR ? 'ERROR' : 'UNSET', ...(s.status.message !== undefined ? { message: s.status.message } : {}) },
      attributes: { ...s.attributes },
    })),
  )
}

