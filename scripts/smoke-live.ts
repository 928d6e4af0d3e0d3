/**
 * Live smoke test: one short real request per provider whose API key is set in the environment, straight
 * through the adapters (no agent loop yet). Exits 0 with a notice when no key is set, 1 when any provider
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
import { BlockAssembler } from '../src/llm/block-assembler.js'
import { createUserMessage } from '../src/llm/messages.js'
import { StreamGrammar } from '../src/llm/stream-grammar.js'
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
  const grammar = new StreamGrammar()
  const assembler = new BlockAssembler()
  const signal = AbortSignal.timeout(120_000)
  const request: GenerateOptions = { ...test.request, messages: [createUserMessage('Reply with the single word: pong')], signal }
  const started = Date.now()
  for await (const chunk of test.adapter().stream(request)) {
    const problem = grammar.check(chunk)
    if (problem !== undefined) {
      console.log(`✗ ${test.name}: stream grammar broken: ${problem}`)
      return false
    }
    assembler.push(chunk)
  }
  const finish = assembler.finish
  const text = assembler
    .blocks()
    .map((b) => (b.type === 'text' ? b.text : ''))
    .join('')
    .trim()
  const usage = assembler.usage
  const ms = Date.now() - started
  if (finish.kind === 'error' || finish.kind === 'aborted') {
    console.log(`✗ ${test.name} (${test.request.model}): ${finish.failure.code}: ${finish.failure.message}`)
    return false
  }
  const usageText = usage === undefined ? 'no usage' : `in ${usage.inputTokens} (+${usage.cacheReadTokens ?? 0} cached) out ${usage.outputTokens}`
  console.log(`✓ ${test.name} (${test.request.model}) ${finish.kind} in ${ms} ms, ${usageText}: ${JSON.stringify(text.slice(0, 80))}`)
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
