import { randomUUID } from 'node:crypto'

/**
 * A fresh message id as a flat string. Node builds `randomUUID()` by concatenating hex pieces, which V8 keeps as
 * a tree of ~20 cons-string nodes (~0.5 KiB); every logged message keeps its id for the session's life, so the
 * first character read flattens it once (to the 36 characters it is) before it is stored.
 */
function newMessageId(): string {
  const id = randomUUID()
  id.charCodeAt(0)
  return id
}
import { deepFreeze, snapshotJson } from '../json/lossless.js'
import type { AssistantMessage, ContentBlock, ModelSource, MessageSource, ToolResultMessage, UserMessage } from './types.js'

/**
 * Builds a frozen user message with a fresh id and source `{kind:'user'}` (or the given source).
 * @example
 * ```ts
 * agent.followup(createUserMessage('summarise README.md'))
 * ```
 */
export function createUserMessage(content: string | readonly ContentBlock[], source: MessageSource = { kind: 'user' }): UserMessage {
  const blocks: readonly ContentBlock[] = typeof content === 'string' ? [{ type: 'text', text: content }] : content
  return freeze({ id: newMessageId(), role: 'user', content: blocks, source }) as UserMessage
}

/** Builds a frozen assistant message for a model route. */
export function createAssistantMessage(content: readonly ContentBlock[], source: ModelSource): AssistantMessage {
  return freeze({ id: newMessageId(), role: 'assistant', content, source }) as AssistantMessage
}

/** Builds the user-role message carrying one tool result. */
export function createToolResultMessage(options: {
  callId: string
  content: readonly ContentBlock[]
  isError?: boolean
  id?: string
}): ToolResultMessage {
  const block =
    options.isError === true
      ? { type: 'tool-result', toolCallId: options.callId, content: options.content, isError: true }
      : { type: 'tool-result', toolCallId: options.callId, content: options.content }
  return freeze({
    id: options.id ?? newMessageId(),
    role: 'user',
    content: [block],
    source: { kind: 'tool', callId: options.callId },
  }) as ToolResultMessage
}

/** Normalises `string | UserMessage` input into a frozen user message. */
export function toUserMessage(input: string | UserMessage): UserMessage {
  if (typeof input === 'string') return createUserMessage(input)
  if (input.role !== 'user') throw new TypeError('expected a user-role message')
  return Object.isFrozen(input) ? input : (freeze(input) as UserMessage)
}

/** True when a message is a tool result (user role, one tool-result block, tool source). */
export function isToolResultMessage(message: { role: string; source: MessageSource; content: readonly ContentBlock[] }): message is ToolResultMessage {
  return message.role === 'user' && message.source.kind === 'tool' && message.content.length === 1 && message.content[0]?.type === 'tool-result'
}

function freeze(message: object): object {
  return deepFreeze(snapshotJson(message, 'message') as object)
}

/**
 * An assistant message as a plain, unfrozen object, for code that hands it straight to `session.append`
 * (which copies and freezes it once): saves the second deep copy {@link createAssistantMessage} would make.
 */
export function draftAssistantMessage(content: readonly ContentBlock[], source: ModelSource): AssistantMessage {
  return { id: newMessageId(), role: 'assistant', content, source }
}

/** A tool-result message as a plain, unfrozen object, for direct `session.append` (see {@link draftAssistantMessage}). */
export function draftToolResultMessage(callId: string, content: readonly ContentBlock[], isError: boolean): ToolResultMessage {
  const block = isError ? { type: 'tool-result' as const, toolCallId: callId, content, isError: true } : { type: 'tool-result' as const, toolCallId: callId, content }
  return { id: newMessageId(), role: 'user', content: [block], source: { kind: 'tool', callId } }
}
