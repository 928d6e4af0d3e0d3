import type { JsonValue } from '../../json/lossless.js'
import type { ContentBlock, GenerateOptions, ImageBlock, Message } from '../types.js'
import { imagePlaceholder } from './chat-completions-request.js'

/**
 * Thinking budget (`budget_tokens`) per reasoning effort. Anthropic needs at least 1024 and less than
 * `max_tokens`; the budget is clamped to `max_tokens - 1`, and thinking is left off when that is below 1024.
 */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<string, number>> = Object.freeze({
  low: 2_048,
  medium: 8_192,
  high: 16_384,
  max: 32_768,
})

/** Output cap sent when neither the request nor the model table sets one (the Messages API requires it). */
export const ANTHROPIC_FALLBACK_MAX_TOKENS = 8_192

/** How the endpoint treats thinking history and effort: Anthropic itself, or an Anthropic-format third party. */
export interface AnthropicEndpointTraits {
  /**
   * Whether reasoning without a signature is sent back as a `thinking` block. Anthropic rejects unsigned
   * thinking, so there it is dropped; DeepSeek's `/anthropic` endpoint signs nothing yet requires its thinking
   * back in thinking mode, so third-party endpoints keep it.
   */
  readonly sendUnsignedThinking: boolean
  /** Also send `output_config.effort` (DeepSeek's endpoint ignores `budget_tokens` and reads this instead). */
  readonly sendOutputEffort: boolean
}

type WireBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string } }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; id: string; name: string; input: JsonValue }
  | { type: 'tool_result'; tool_use_id: string; content: string | WireBlock[]; is_error?: true }

interface WireMessage {
  role: 'user' | 'assistant'
  content: WireBlock[]
}

/** Accepted `reasoningEffort` values: `off` plus the keys of {@link ANTHROPIC_THINKING_BUDGETS}. */
export const ANTHROPIC_REASONING_EFFORTS: readonly string[] = Object.freeze(['off', 'low', 'medium', 'high', 'max'])

/**
 * Builds the Messages API body: system prompt as the top-level `system` field, tools as
 * `{name, description, input_schema}`, `thinking` when `reasoningEffort` asks for it (temperature is then left
 * out: Anthropic does not accept it with extended thinking). Returns an error text for an effort we cannot map.
 */
export function anthropicBody(request: GenerateOptions, traits: AnthropicEndpointTraits, defaultMaxTokens: number | undefined): Record<string, JsonValue> | string {
  const maxTokens = request.maxTokens ?? defaultMaxTokens ?? ANTHROPIC_FALLBACK_MAX_TOKENS
  const body: Record<string, JsonValue> = {
    model: request.model,
    max_tokens: maxTokens,
    messages: anthropicMessages(request.messages, traits) as unknown as JsonValue,
    stream: true,
  }
  if (request.system !== undefined && request.system !== '') body.system = request.system
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }))
  }
  if (request.stop !== undefined && request.stop.length > 0) body.stop_sequences = [...request.stop]
  const effort = request.reasoningEffort
  let thinking = false
  if (effort === 'off' || effort === 'none') {
    body.thinking = { type: 'disabled' }
  } else if (effort !== undefined) {
    const budget = ANTHROPIC_THINKING_BUDGETS[effort]
    if (budget === undefined) return `anthropic does not accept reasoning effort '${effort}' (accepted: ${ANTHROPIC_REASONING_EFFORTS.join(', ')})`
    const clamped = Math.min(budget, maxTokens - 1)
    if (clamped >= 1024) {
      body.thinking = { type: 'enabled', budget_tokens: clamped }
      thinking = true
      if (traits.sendOutputEffort) body.output_config = { effort: effort === 'medium' ? 'high' : effort }
    }
  }
  if (request.temperature !== undefined && !thinking) body.temperature = request.temperature
  if (request.output !== undefined) addAnswerTool(body, request, thinking)
  return body
}

/**
 * Structured output through a tool the answer is given to (its input is the JSON value; the stream reads it back
 * as text, see `AnthropicTranslator`). The tool is forced: `tool_choice` names it when it is the only tool, and
 * is `any` beside the agent's own tools (each step then calls a tool, the last one the answer tool). With
 * extended thinking Anthropic accepts only `auto`, so the system prompt asks for the tool instead.
 */
function addAnswerTool(body: Record<string, JsonValue>, request: GenerateOptions, thinking: boolean): void {
  const output = request.output
  if (output === undefined) return
  const description = `Give your final answer by calling this tool; its input is the answer${output.description !== undefined && output.description !== '' ? `: ${output.description}` : '.'}`
  const tools = Array.isArray(body.tools) ? body.tools : []
  body.tools = [...tools, { name: output.name, description, input_schema: output.schema }]
  if (thinking) {
    const ask = `When you have the final answer, give it by calling the \`${output.name}\` tool, never as text.`
    body.system = request.system !== undefined && request.system !== '' ? `${request.system}\n\n${ask}` : ask
    body.tool_choice = { type: 'auto' }
  } else {
    body.tool_choice = tools.length === 0 ? { type: 'tool', name: output.name } : { type: 'any' }
  }
}

/**
 * Maps history to Messages API turns: tool results become `tool_result` blocks in user turns, tool calls
 * `tool_use` blocks with parsed `input`, signed reasoning `thinking` blocks; empty text blocks are dropped (the
 * API rejects them) and consecutive same-role turns are merged (the API wants strict alternation).
 */
export function anthropicMessages(messages: readonly Message[], traits: AnthropicEndpointTraits): WireMessage[] {
  const out: WireMessage[] = []
  for (const message of messages) {
    const content = message.role === 'assistant' ? assistantBlocks(message.content, traits) : userBlocks(message.content)
    if (content.length === 0) continue
    const last = out[out.length - 1]
    if (last !== undefined && last.role === message.role) last.content.push(...content)
    else out.push({ role: message.role, content })
  }
  return out
}

function assistantBlocks(content: readonly ContentBlock[], traits: AnthropicEndpointTraits): WireBlock[] {
  const out: WireBlock[] = []
  for (const block of content) {
    if (block.type === 'text') {
      if (block.text !== '') out.push({ type: 'text', text: block.text })
    } else if (block.type === 'reasoning') {
      if (block.signature !== undefined && block.signature !== '') out.push({ type: 'thinking', thinking: block.text, signature: block.signature })
      else if (traits.sendUnsignedThinking) out.push({ type: 'thinking', thinking: block.text })
    } else if (block.type === 'tool-call') {
      out.push({ type: 'tool_use', id: block.id, name: block.name, input: toolInput(block.arguments) })
    }
  }
  return out
}

/**
 * `tool_use.input` must be an object. Arguments the model streamed as invalid JSON were already answered with
 * an INVALID_ARGS tool result, so `{}` loses nothing the model needs.
 */
function toolInput(args: string): JsonValue {
  try {
    const parsed: unknown = JSON.parse(args === '' ? '{}' : args)
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as JsonValue) : {}
  } catch {
    return {}
  }
}

function userBlocks(content: readonly ContentBlock[]): WireBlock[] {
  const out: WireBlock[] = []
  for (const block of content) {
    if (block.type === 'text') {
      if (block.text !== '') out.push({ type: 'text', text: block.text })
    } else if (block.type === 'image') {
      out.push(imageBlock(block))
    } else if (block.type === 'tool-result') {
      const inner = userBlocks(block.content).filter((b) => b.type === 'text' || b.type === 'image')
      const onlyText = inner.every((b) => b.type === 'text')
      const text = inner.map((b) => (b.type === 'text' ? b.text : '')).join('')
      const wire: WireBlock = {
        type: 'tool_result',
        tool_use_id: block.toolCallId,
        content: onlyText ? (text === '' ? '(no output)' : text) : inner,
        ...(block.isError === true ? { is_error: true as const } : {}),
      }
      out.push(wire)
    }
  }
  return out
}

function imageBlock(block: ImageBlock): WireBlock {
  const url = block.attachment.url
  if (url === undefined || url === '') return { type: 'text', text: imagePlaceholder(block) }
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url)
  if (data !== null) return { type: 'image', source: { type: 'base64', media_type: data[1] ?? block.attachment.mediaType, data: data[2] ?? '' } }
  return { type: 'image', source: { type: 'url', url } }
}
