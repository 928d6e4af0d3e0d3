import { randomFillSync } from 'node:crypto'

// Random bytes for message ids, drawn 16 per id from a pool refilled 64 ids at a time (as randomUUID's own cache).
const POOL = Buffer.allocUnsafe(16 * 64)
let poolOffset = POOL.length
// One id is formatted into this buffer and read out as a single flat Latin-1 string: the 36 characters it is, not
// the tree of ~20 concatenated pieces (~0.5 KiB) a template or randomUUID() leaves, which every logged message keeps.
const ID = Buffer.alloc(36, 0x2d)
const HEX = Buffer.from('0123456789abcdef', 'latin1')
// Where each of the 16 bytes goes in the formatted id (8-4-4-4-12 hex digits).
const BYTE_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]

/** A fresh message id: a random (version 4) UUID as a flat string. */
function newMessageId(): string {
  if (poolOffset === POOL.length) {
    randomFillSync(POOL)
    poolOffset = 0
  }
  for (let i = 0; i < 16; i++) {
    let byte = POOL[poolOffset + i] as number
    if (i === 6) byte = (byte & 0x0f) | 0x40 // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80 // RFC 4122 variant
    const at = BYTE_AT[i] as number
    ID[at] = HEX[byte >> 4] as number
    ID[at + 1] = HEX[byte & 0x0f] as number
  }
  poolOffset += 16
  return ID.toString('latin1', 0, 36)
}
import { deepFreeze, snapshotJson } from '../json/lossless.js'
import type { AssistantMessage, ContentBlock, ModelSource, MessageSource, ToolResultBlock, ToolResultMessage, UserMessage } from './types.js'

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
 * An assistant message for code that hands it straight to `session.append`: the message, its source and its
 * content array and blocks are frozen in place (no copy), so the log adopts it after a read-only walk instead of
 * copying it; anything left unfrozen deeper down (a caller's object) makes the log copy it as usual.
 */
export function draftAssistantMessage(content: readonly ContentBlock[], source: ModelSource): AssistantMessage {
  for (const block of content) Object.freeze(block)
  return Object.freeze({ id: newMessageId(), role: 'assistant', content: Object.freeze(content), source: Object.freeze(source) })
}

/** A tool-result message built frozen for direct `session.append` (see {@link draftAssistantMessage}). */
export function draftToolResultMessage(callId: string, content: readonly ContentBlock[], isError: boolean): ToolResultMessage {
  const block = isError ? { type: 'tool-result' as const, toolCallId: callId, content, isError: true } : { type: 'tool-result' as const, toolCallId: callId, content }
  const blocks: readonly [ToolResultBlock] = Object.freeze([Object.freeze(block)])
  return Object.freeze({ id: newMessageId(), role: 'user', content: blocks, source: Object.freeze({ kind: 'tool', callId }) })
}
