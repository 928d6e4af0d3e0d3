import type { LoopbackReply } from './loopback.js'

/** DeepSeek's usage object for one reply (the shape of fixtures/deepseek-thinking-tools.sse). */
export interface DeepseekUsage {
  readonly promptTokens: number
  readonly cacheHitTokens: number
  readonly completionTokens: number
}

const DEFAULT_USAGE: DeepseekUsage = { promptTokens: 10, cacheHitTokens: 6, completionTokens: 5 }

/**
 * DeepSeek Chat Completions SSE for one reply, as the API streams it: a role chunk with an empty
 * `reasoning_content`, optional reasoning, text and tool-call deltas, a finish chunk, then a separate usage chunk
 * with `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`, then `[DONE]`.
 */
export function deepseekReply(
  parts: { reasoning?: string; text?: string; toolCalls?: { id: string; name: string; args: string }[] },
  usage: DeepseekUsage = DEFAULT_USAGE,
): LoopbackReply {
  const frame = (body: object): string => `data: ${JSON.stringify({ id: 'r1', object: 'chat.completion.chunk', created: 1767225600, model: 'deepseek-flash', ...body })}\n\n`
  const chunk = (delta: object, finish: string | null = null) => frame({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })
  const lines = [chunk({ role: 'assistant', content: null, reasoning_content: '' })]
  if (parts.reasoning !== undefined) lines.push(chunk({ content: null, reasoning_content: parts.reasoning }))
  if (parts.text !== undefined) lines.push(chunk({ content: parts.text }))
  parts.toolCalls?.forEach((c, i) => lines.push(chunk({ tool_calls: [{ index: i, id: c.id, type: 'function', function: { name: c.name, arguments: c.args } }] })))
  lines.push(chunk({ content: '' }, parts.toolCalls ? 'tool_calls' : 'stop'))
  const miss = usage.promptTokens - usage.cacheHitTokens
  lines.push(
    frame({
      choices: [],
      usage: {
        prompt_tokens: usage.promptTokens,
        completion_tokens: usage.completionTokens,
        total_tokens: usage.promptTokens + usage.completionTokens,
        prompt_tokens_details: { cached_tokens: usage.cacheHitTokens },
        prompt_cache_hit_tokens: usage.cacheHitTokens,
        prompt_cache_miss_tokens: miss,
      },
    }),
  )
  lines.push('data: [DONE]\n\n')
  return { status: 200, headers: { 'content-type': 'text/event-stream' }, chunks: lines, gapMs: 0 }
}

/** DeepSeek's answer to a prompt longer than the model's context (HTTP 400, its real wording). */
export function deepseekContextOverflow(requested: number, limit: number): LoopbackReply {
  const message =
    `This model's maximum context length is ${limit} tokens. However, you requested ${requested} tokens ` +
    `(${requested - 100} in the messages, 100 in the completion). Please reduce the length of the messages or completion.`
  return {
    status: 400,
    headers: { 'content-type': 'application/json' },
    chunks: [JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: 'invalid_request_error' } })],
  }
}
