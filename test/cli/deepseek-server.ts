import { startLoopback, type Loopback, type LoopbackReply } from '../llm/adapters/loopback.js'

/** One model turn as a DeepSeek-format server streams it. */
export interface DeepseekTurn {
  readonly reasoning?: readonly string[]
  readonly text?: readonly string[]
  readonly toolCall?: { readonly name: string; readonly arguments: string }
  /** `: keep-alive` comments sent before the first chunk (DeepSeek sends them while a request is queued). */
  readonly keepAlives?: number
  readonly usage?: { readonly hit: number; readonly miss: number; readonly output: number }
}

let callCounter = 0

/** The SSE body DeepSeek's `/chat/completions` streams for one turn (field names and order as the API sends them). */
export function deepseekSse(turn: DeepseekTurn): string[] {
  const id = `ds-${++callCounter}`
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1767225600, model: 'deepseek-flash', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`
  const out: string[] = []
  for (let i = 0; i < (turn.keepAlives ?? 0); i++) out.push(': keep-alive\n\n')
  out.push(chunk({ role: 'assistant', content: null, reasoning_content: '' }))
  for (const piece of turn.reasoning ?? []) out.push(chunk({ content: null, reasoning_content: piece }))
  for (const piece of turn.text ?? []) out.push(chunk({ content: piece, reasoning_content: null }))
  if (turn.toolCall !== undefined) {
    out.push(chunk({ content: null, tool_calls: [{ index: 0, id: `call_${callCounter}`, type: 'function', function: { name: turn.toolCall.name, arguments: '' } }] }))
    out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: turn.toolCall.arguments } }] }))
  }
  out.push(chunk({ content: '' }, turn.toolCall !== undefined ? 'tool_calls' : 'stop', { usage: null }))
  const usage = turn.usage ?? { hit: 1024, miss: 200, output: 50 }
  out.push(
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1767225600, model: 'deepseek-flash', choices: [], usage: { prompt_tokens: usage.hit + usage.miss, completion_tokens: usage.output, total_tokens: usage.hit + usage.miss + usage.output, prompt_cache_hit_tokens: usage.hit, prompt_cache_miss_tokens: usage.miss } })}\n\n`,
  )
  out.push('data: [DONE]\n\n')
  return out
}

/** Starts a loopback server answering each request with the next reply (turns become SSE replies). */
export function startDeepseek(replies: readonly (DeepseekTurn | LoopbackReply)[]): Promise<Loopback> {
  return startLoopback(replies.map((r) => ('chunks' in r || 'status' in r || 'after' in r ? (r as LoopbackReply) : { chunks: deepseekSse(r as DeepseekTurn), gapMs: 5 })))
}
