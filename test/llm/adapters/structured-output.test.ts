// Structured output end to end on each HTTP adapter: a harness runs `agent.run({ output })` against a loopback
// server speaking the provider's wire, and the tests read what the server received (the native mode in the body)
// and what the run resolved with (the parsed answer, a repair step, OUTPUT_INVALID after the bound).
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { anthropicAdapter, createHarness, deepseekAdapter, invariantPlugin, openaiCompatibleAdapter, retryPlugin, verifySessionLog, type LlmAdapter } from '../../../src/index.js'
import { reconstructionProblems } from '../../../src/views/request-reconstruction.js'
import { deepseekReply } from './deepseek-wire.js'
import { servePerTest, type LoopbackReply } from './loopback.js'

const KEY = 'sk-test-SENTINEL-structured'
const serve = servePerTest()
const City = z.object({ city: z.string(), population: z.number().int() })
type Body = { [key: string]: unknown; messages: { role: string; content: unknown }[]; system?: string }

async function runOn(adapter: LlmAdapter, model: string, options: { outputRepairs?: number; retry?: boolean } = {}) {
  const plugins = [invariantPlugin(), ...(options.retry === true ? [retryPlugin({ baseDelayMs: 1, maxDelayMs: 1 })] : [])]
  const harness = createHarness({ adapters: [adapter], plugins })
  const agent = await harness.createAgent({ provider: adapter.provider, model })
  const result = await agent.run('Biggest city of Japan?', { output: City, ...(options.outputRepairs !== undefined ? { outputRepairs: options.outputRepairs } : {}) })
  const events = agent.session.events
  await harness.close()
  return { result, events }
}

/** An Anthropic Messages stream: optional text, then tool_use blocks whose input streams as JSON pieces. */
function anthropicReply(parts: { text?: string; tools?: { id: string; name: string; input: string }[] }): LoopbackReply {
  const ev = (type: string, data: object): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const out = [ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'claude-x', usage: { input_tokens: 12, output_tokens: 1 } } })]
  let index = 0
  if (parts.text !== undefined) {
    out.push(ev('content_block_start', { index, content_block: { type: 'text', text: '' } }))
    out.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: parts.text } }))
    out.push(ev('content_block_stop', { index }))
    index++
  }
  for (const tool of parts.tools ?? []) {
    out.push(ev('content_block_start', { index, content_block: { type: 'tool_use', id: tool.id, name: tool.name, input: {} } }))
    const half = Math.floor(tool.input.length / 2)
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: tool.input.slice(0, half) } }))
    out.push(ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: tool.input.slice(half) } }))
    out.push(ev('content_block_stop', { index }))
    index++
  }
  out.push(ev('message_delta', { delta: { stop_reason: parts.tools !== undefined ? 'tool_use' : 'end_turn' }, usage: { output_tokens: 9 } }))
  out.push(ev('message_stop', {}))
  return { chunks: [out.join('')] }
}

describe('structured output on the OpenAI-compatible wire', () => {
  it('sends response_format json_schema with the schema and strict, and returns the parsed answer', async () => {
    const s = await serve([deepseekReply({ text: '{"city":"Tokyo","population":14000000}' })])
    const { result, events } = await runOn(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: KEY }), 'gpt-x')
    expect(result.output).toEqual({ city: 'Tokyo', population: 14000000 })
    const body = s.requests[0]?.json as Body
    expect(body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'final_answer', strict: true, schema: expect.objectContaining({ type: 'object', required: ['city', 'population'], additionalProperties: false }) },
    })
    // The native mode needs no instruction: the system prompt is untouched.
    expect(JSON.stringify(body.messages)).not.toContain('JSON Schema')
    expect(verifySessionLog(events).problems).toEqual([])
    expect(reconstructionProblems(events)).toEqual([])
  })

  it('a model whose info opts out gets the schema as an instruction instead, and a repair step for prose', async () => {
    const s = await serve([deepseekReply({ text: 'Tokyo, about 14 million.' }), deepseekReply({ text: '{"city":"Tokyo","population":14000000}' })])
    const adapter = openaiCompatibleAdapter({ provider: 'local', baseURL: s.baseURL, models: { small: { structuredOutput: 'instructions' } } })
    const { result } = await runOn(adapter, 'small')
    expect(result.output).toEqual({ city: 'Tokyo', population: 14000000 })
    const first = s.requests[0]?.json as Body
    expect(first.response_format).toBeUndefined()
    expect(first.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('"required":["city","population"]') })
    // The repair: the invalid answer, then the steer that names the problem, in the second request.
    const second = s.requests[1]?.json as Body
    expect(second.messages.at(-2)).toMatchObject({ role: 'assistant', content: 'Tokyo, about 14 million.' })
    expect(second.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('the answer is not JSON') })
  })

  it('ends OUTPUT_INVALID after the repair bound, listing the issues', async () => {
    const bad = (): LoopbackReply => deepseekReply({ text: '{"city":"Tokyo","population":"many"}' })
    const s = await serve([bad(), bad()])
    const { result } = await runOn(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: KEY }), 'gpt-x', { outputRepairs: 1 })
    expect(result.reason.kind).toBe('error')
    expect(result.failure?.code).toBe('OUTPUT_INVALID')
    expect(result.failure?.message).toContain('population')
    expect(s.requests).toHaveLength(2)
  })
})

describe('structured output on the DeepSeek wire', () => {
  it('sends response_format json_object with the schema in the system prompt', async () => {
    const s = await serve([deepseekReply({ reasoning: 'Tokyo.', text: '{"city":"Tokyo","population":14000000}' })])
    const { result } = await runOn(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), 'deepseek-flash')
    expect(result.output).toEqual({ city: 'Tokyo', population: 14000000 })
    const body = s.requests[0]?.json as Body
    expect(body.response_format).toEqual({ type: 'json_object' })
    // DeepSeek's JSON mode wants the word "json" and the expected shape in the prompt.
    expect(body.messages[0]).toMatchObject({ role: 'system', content: expect.stringMatching(/JSON[\s\S]*"population"/) })
  })

  it('retries the documented empty-content reply (EMPTY_RESPONSE) through the retry plugin', async () => {
    const s = await serve([deepseekReply({ reasoning: 'thinking only', text: '' }), deepseekReply({ text: '{"city":"Tokyo","population":1}' })])
    const { result, events } = await runOn(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), 'deepseek-flash', { retry: true })
    expect(result.output).toEqual({ city: 'Tokyo', population: 1 })
    expect(s.requests).toHaveLength(2)
    // A retry in the same step, not a repair: no steer was sent.
    expect(events.filter((e) => e.type === 'step/start')).toHaveLength(1)
    expect(events.some((e) => e.type === 'llm/retry')).toBe(true)
  })

  it('repairs invalid JSON with a steer, then ends OUTPUT_INVALID after the bound', async () => {
    const s = await serve([deepseekReply({ text: '{"city": "Tokyo",' }), deepseekReply({ text: '{"city": 3}' }), deepseekReply({ text: '[]' })])
    const { result } = await runOn(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), 'deepseek-flash')
    expect(s.requests).toHaveLength(3)
    expect(JSON.stringify((s.requests[1]?.json as Body).messages.at(-1))).toContain('not JSON')
    expect(result.failure?.code).toBe('OUTPUT_INVALID')
    expect(result.failure?.message).toContain('after 2 repair steps')
  })
})

describe('structured output on the Anthropic wire', () => {
  it('forces an answer tool (tool_choice) and reads its input back as the answer', async () => {
    const s = await serve([anthropicReply({ tools: [{ id: 'toolu_1', name: 'final_answer', input: '{"city":"Tokyo","population":14000000}' }] })])
    const { result, events } = await runOn(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), 'claude-x')
    expect(result.reason).toEqual({ kind: 'completed' })
    expect(result.output).toEqual({ city: 'Tokyo', population: 14000000 })
    expect(result.toolCalls).toEqual([])
    const body = s.requests[0]?.json as Body
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'final_answer' })
    expect(body.tools).toEqual([{ name: 'final_answer', description: expect.stringContaining('final answer'), input_schema: expect.objectContaining({ required: ['city', 'population'] }) }])
    expect(verifySessionLog(events).problems).toEqual([])
    expect(reconstructionProblems(events)).toEqual([])
  })

  it('repairs an invalid answer, then ends OUTPUT_INVALID after the bound', async () => {
    const s = await serve([
      anthropicReply({ tools: [{ id: 'toolu_1', name: 'final_answer', input: '{"city":"Tokyo"}' }] }),
      anthropicReply({ tools: [{ id: 'toolu_2', name: 'final_answer', input: '{"city":"Tokyo","population":1.5}' }] }),
    ])
    const { result } = await runOn(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), 'claude-x', { outputRepairs: 1 })
    const second = s.requests[1]?.json as Body
    // The first answer went back as the assistant's text, the issues as the user's steer.
    expect(second.messages.at(-2)).toEqual({ role: 'assistant', content: [{ type: 'text', text: '{"city":"Tokyo"}' }] })
    expect(JSON.stringify(second.messages.at(-1))).toContain('population')
    expect(result.failure?.code).toBe('OUTPUT_INVALID')
    expect(result.failure?.message).toContain('population')
  })

  it('with extended thinking the tool choice stays auto and the system prompt asks for the tool', async () => {
    const s = await serve([anthropicReply({ text: 'Let me answer.', tools: [{ id: 'toolu_1', name: 'final_answer', input: '{"city":"Tokyo","population":2}' }] })])
    const harness = createHarness({ adapters: [anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL })], plugins: [invariantPlugin()] })
    const agent = await harness.createAgent({ provider: 'anthropic', model: 'claude-x' })
    harness.hooks.on('agent/request', async (_payload, next) => ({ ...(await next()), reasoningEffort: 'low' }))
    const result = await agent.run('Biggest city?', { output: City })
    await harness.close()
    const body = s.requests[0]?.json as Body
    expect(body.thinking).toMatchObject({ type: 'enabled' })
    expect(body.tool_choice).toEqual({ type: 'auto' })
    expect(body.system).toContain('`final_answer` tool')
    // Prose before the answer tool: the answer is still found.
    expect(result.output).toEqual({ city: 'Tokyo', population: 2 })
  })
})
