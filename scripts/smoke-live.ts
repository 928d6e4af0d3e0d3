/**
 * Live smoke test: one short real conversation per provider whose API key is set in the environment, through
 * the full loop with a tool call. Exits 0 with a notice when no key is set, 1 when any provider
 * fails. Keys are never printed.
 *
 *   DEEPSEEK_API_KEY   → deepseekAdapter,          model $DEEPSEEK_MODEL  (default deepseek-flash)
 *   ANTHROPIC_API_KEY  → anthropicAdapter,         model $ANTHROPIC_MODEL (default claude-haiku-4-5), base $ANTHROPIC_BASE_URL
 *   OPENAI_API_KEY     → openaiCompatibleAdapter,  model $OPENAI_MODEL    (default gpt-5-mini), base $OPENAI_BASE_URL
 *
 * Run with `npm run smoke:live`.
 */
import { anthropicAdapter } from '../src/llm/adapters/anthropic.js'
import { deepseekAdapter } from '../src/llm/adapters/deepseek.js'
import { openaiCompatibleAdapter } from '../src/llm/adapters/openai-compatible.js'
import { z } from 'zod'
import { createHarness, defineTool, invariantPlugin, retryPlugin, verifySessionLog } from '../src/index.js'
import type { GenerateOptions, LlmAdapter } from '../src/llm/types.js'

interface SmokeCase {
  readonly name: string
  readonly keyEnv: string
  readonly adapter: () => LlmAdapter
  readonly request: Omit<GenerateOptions, 'messages' | 'signal'>
}

const env = (name: string): string | undefined => {
  const value = process.env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

const cases: SmokeCase[] = [
  {
    name: 'deepseek',
    keyEnv: 'DEEPSEEK_API_KEY',
    adapter: () => deepseekAdapter(),
    request: { provider: 'deepseek', model: env('DEEPSEEK_MODEL') ?? 'deepseek-flash', maxTokens: 512, reasoningEffort: 'low' },
  },
  {
    name: 'anthropic',
    keyEnv: 'ANTHROPIC_API_KEY',
    adapter: () => anthropicAdapter({ ...(env('ANTHROPIC_BASE_URL') !== undefined ? { baseURL: env('ANTHROPIC_BASE_URL') } : {}) }),
    request: { provider: 'anthropic', model: env('ANTHROPIC_MODEL') ?? 'claude-haiku-4-5', maxTokens: 256 },
  },
  {
    name: 'openai',
    keyEnv: 'OPENAI_API_KEY',
    adapter: () => openaiCompatibleAdapter({ provider: 'openai', baseURL: env('OPENAI_BASE_URL') ?? 'https://api.openai.com/v1' }),
    request: { provider: 'openai', model: env('OPENAI_MODEL') ?? 'gpt-5-mini', maxTokens: 512 },
  },
]

async function smoke(test: SmokeCase): Promise<boolean> {
  // The full loop, with a tool round trip: exercises history mapping (tool results, DeepSeek's
  // reasoning_content) on the second request, which a single adapter call cannot.
  let added: number | undefined
  const add = defineTool({
    name: 'add',
    description: 'Adds two integers and returns the sum',
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => String((added = a + b)),
  })
  const harness = createHarness({ adapters: [test.adapter()], tools: [add], plugins: [invariantPlugin(), retryPlugin({ maxAttempts: 3 })] })
  const { provider, model, maxTokens, reasoningEffort } = test.request
  const agent = await harness.createAgent({ provider, model, ...(maxTokens !== undefined ? { maxTokens } : {}) })
  if (reasoningEffort !== undefined) harness.hooks.on('agent/request', async (_p, next) => ({ ...(await next()), reasoningEffort }))
  const started = Date.now()
  const timer = setTimeout(() => agent.cancel({ kind: 'hook', reason: 'smoke test timeout' }), 120_000)
  agent.followup('Use the add tool to add 2 and 3, then reply with just the sum.')
  await agent.whenIdle()
  clearTimeout(timer)
  const events = agent.session.events
  const end = events.filter((e) => e.type === 'turn/end').at(-1)?.data as { reason: { kind: string; error?: { code: string; message: string } } }
  const verdict = verifySessionLog(events)
  const reply = agent.session.deriveMessages().at(-1)
  const text = reply?.role === 'assistant' ? reply.content.map((b) => (b.type === 'text' ? b.text : '')).join('').trim() : ''
  const usage = events.filter((e) => e.type === 'assistant/message').map((e) => (e.data as { usage?: { inputTokens: number; cacheReadTokens?: number; outputTokens: number } }).usage)
  await harness.close()
  const ms = Date.now() - started
  if (end.reason.kind !== 'completed' || added !== 5 || !verdict.ok) {
    const why = end.reason.error !== undefined ? `${end.reason.error.code}: ${end.reason.error.message}` : end.reason.kind
    console.log(`✗ ${test.name} (${model}): turn ${why}; tool result ${String(added)}; log ${verdict.ok ? 'ok' : verdict.problems.join('; ')}`)
    return false
  }
  const tokens = usage.map((u) => (u === undefined ? 'no usage' : `in ${u.inputTokens} (+${u.cacheReadTokens ?? 0} cached) out ${u.outputTokens}`)).join(', ')
  console.log(`✓ ${test.name} (${model}) ${usage.length} requests in ${ms} ms [${tokens}]: ${JSON.stringify(text.slice(0, 80))}`)
  return true
}

const runnable = cases.filter((c) => env(c.keyEnv) !== undefined)
if (runnable.length === 0) {
  console.log(`smoke:live: no provider key is set (${cases.map((c) => c.keyEnv).join(', ')}); nothing to test, skipping.`)
  process.exit(0)
}
let ok = true
for (const test of runnable) ok = (await smoke(test)) && ok
for (const skipped of cases.filter((c) => !runnable.includes(c))) console.log(`- ${skipped.name}: skipped (${skipped.keyEnv} not set)`)
process.exit(ok ? 0 : 1)
