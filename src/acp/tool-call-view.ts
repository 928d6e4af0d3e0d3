// How a ledgerloop tool call looks to an ACP client: its title, kind and locations (shown while it is pending
// and while the client asks permission), and its result as ACP tool-call content. Pure functions of the call's
// name and arguments and of its logged result, so the live stream and a `session/load` replay show the same.
import { isAbsolute, join } from 'node:path'
import type { ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk'
import type { ContentBlock } from '../llm/types.js'

/** What a client shows for one call before it has a result. */
export interface ToolCallView {
  readonly title: string
  readonly kind: ToolKind
  readonly locations: ToolCallLocation[]
  /** The arguments as the model sent them, parsed when they are JSON (else the raw text). */
  readonly rawInput: unknown
}

// The built-in tools by what they do, so a client can pick an icon and know which calls change files.
const KINDS: Readonly<Record<string, ToolKind>> = {
  read_file: 'read',
  write_file: 'edit',
  edit_file: 'edit',
  list: 'search',
  grep: 'search',
  glob: 'search',
  bash: 'execute',
}

// The argument each built-in tool's title is made from (the same subject the permission rules match).
const SUBJECTS: Readonly<Record<string, string>> = { read_file: 'path', write_file: 'path', edit_file: 'path', list: 'path', grep: 'pattern', glob: 'pattern', bash: 'command' }

const TITLE_MAX = 120

/** The view of a call to `name` with the model's `argumentsText`, paths made absolute against `root`. */
export function toolCallView(name: string, argumentsText: string, root: string): ToolCallView {
  const rawInput = parseArguments(argumentsText)
  const args = isRecord(rawInput) ? rawInput : {}
  const key = SUBJECTS[name]
  const subject = key !== undefined && typeof args[key] === 'string' ? (args[key] as string) : ''
  const title = clip(subject !== '' ? `${name} ${subject.replace(/\s+/g, ' ')}` : name)
  const path = typeof args.path === 'string' && args.path !== '' && key === 'path' ? args.path : undefined
  return {
    title,
    kind: KINDS[name] ?? 'other',
    locations: path !== undefined ? [{ path: absoluteIn(root, path) }] : [],
    rawInput,
  }
}

/** A tool result's content blocks as ACP tool-call content (text and images; nothing else is meant for people). */
export function resultContent(blocks: readonly ContentBlock[]): ToolCallContent[] {
  const out: ToolCallContent[] = []
  for (const block of blocks) {
    if (block.type === 'text' && block.text !== '') out.push({ type: 'content', content: { type: 'text', text: block.text } })
  }
  return out
}

/** The text of a tool result's blocks (what `rawOutput` carries). */
export function resultText(blocks: readonly ContentBlock[]): string {
  return blocks.map((b) => (b.type === 'text' ? b.text : '')).join('')
}

/** `path` (relative to the tool root, as the model gives it) as the absolute path ACP wants. */
export function absoluteIn(root: string, path: string): string {
  return isAbsolute(path) ? path : join(root, path)
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function clip(text: string): string {
  return text.length <= TITLE_MAX ? text : `${text.slice(0, TITLE_MAX - 1)}…`
}
