// The `session/update`s of a ledgerloop session, read off its log: while a prompt runs (each committed event
// as it is published) and when a client loads the session (the stored conversation, replayed). Both read the
// same events through the same mapping, so a loaded session shows what the live one showed — apart from file
// diffs, whose previous content only the live stream saw (see docs/acp.md).
import type { SessionUpdate, ToolCallContent } from '@agentclientprotocol/sdk'
import type { Harness } from '../harness/harness.js'
import type { ContentBlock, StreamChunk, ToolResultMessage, UserMessage } from '../llm/types.js'
import type { CoreEventData, SessionEvent } from '../session/events.js'
import type { PermissionDecisionData } from '../plugins/permission.js'
import type { Workspace } from '../tools/builtin/workspace-path.js'
import { plannedDiff } from './file-diff.js'
import { resultContent, resultText, toolCallView } from './tool-call-view.js'

/** Where the updates of one session go (a `session/update` notification each). */
export type UpdateSink = (update: SessionUpdate) => void

/** The streamed text of a chunk, as a message or thought chunk; undefined for every other chunk. */
function chunkUpdate(chunk: StreamChunk): SessionUpdate | undefined {
  if (chunk.type === 'text-delta' && chunk.text !== '') return { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: chunk.text } }
  if (chunk.type === 'reasoning-delta' && chunk.text !== '') return { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: chunk.text } }
  return undefined
}

/** The `tool_call` that announces a logged call (pending: not yet allowed or run). */
function toolCallAnnounced(data: CoreEventData['tool/call'], root: string): SessionUpdate {
  const view = toolCallView(data.name, data.arguments, root)
  return { sessionUpdate: 'tool_call', toolCallId: data.callId, name: data.name, status: 'pending', ...view }
}

/** The final `tool_call_update` of a call: its status and what it returned (after `before`, e.g. its diff). */
function toolCallFinished(data: CoreEventData['tool/result'], before: readonly ToolCallContent[]): SessionUpdate {
  const message: ToolResultMessage = data.message
  const block = message.content[0]
  const failed = data.error !== undefined || block.isError === true
  const content = [...(failed ? [] : before), ...resultContent(block.content)]
  return { sessionUpdate: 'tool_call_update', toolCallId: message.source.callId, status: failed ? 'failed' : 'completed', content, rawOutput: resultText(block.content) }
}

/** What a person typed: the text of a user prompt (runtime context, tool results and plugin notes are not). */
function promptUpdates(message: UserMessage): SessionUpdate[] {
  if (message.source.kind !== 'user') return []
  return textOf(message.content).map((text) => ({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text } }))
}

function textOf(blocks: readonly ContentBlock[]): string[] {
  return blocks.flatMap((b) => (b.type === 'text' && b.text !== '' ? [b.text] : []))
}

/**
 * The stored conversation as updates, in log order: each prompt as a user message chunk, each assistant
 * message's reasoning and text as thought and message chunks, each tool call announced and then finished with
 * its result. `root` makes tool paths absolute. An `edit_file` shows the edit it asked for as its diff.
 */
export function replayUpdates(events: readonly SessionEvent[], root: string): SessionUpdate[] {
  const updates: SessionUpdate[] = []
  const edits = new Map<string, ToolCallContent[]>()
  for (const event of events) {
    switch (event.type) {
      case 'user/message':
        updates.push(...promptUpdates(event.data as unknown as UserMessage))
        break
      case 'assistant/message': {
        const { message } = event.data as unknown as CoreEventData['assistant/message']
        for (const block of message.content) {
          if (block.type === 'reasoning' && block.text !== '') updates.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: block.text } })
          else if (block.type === 'text' && block.text !== '') updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: block.text } })
        }
        break
      }
      case 'tool/call': {
        const data = event.data as unknown as CoreEventData['tool/call']
        updates.push(toolCallAnnounced(data, root))
        const edit = askedEdit(data, root)
        if (edit !== undefined) edits.set(data.callId, [edit])
        break
      }
      case 'tool/result': {
        const data = event.data as unknown as CoreEventData['tool/result']
        updates.push(toolCallFinished(data, edits.get(data.message.source.callId) ?? []))
        break
      }
    }
  }
  return updates
}

/** The replacement an `edit_file` call asked for, as a diff of just that text (the file around it is not logged). */
function askedEdit(data: CoreEventData['tool/call'], root: string): ToolCallContent | undefined {
  if (data.name !== 'edit_file') return undefined
  const view = toolCallView(data.name, data.arguments, root)
  const args = view.rawInput as { oldText?: unknown; newText?: unknown }
  const path = view.locations[0]?.path
  if (path === undefined || typeof args.oldText !== 'string' || typeof args.newText !== 'string') return undefined
  return { type: 'diff', path, oldText: args.oldText, newText: args.newText }
}

/** What {@link streamUpdates} follows. */
export interface LiveSession {
  readonly harness: Harness
  readonly sessionId: string
  /** The session's cwd as the client named it (tool paths are made absolute against it). */
  readonly root: string
  /** The tool root, for reading a file's content before a change to it. */
  readonly workspace: Workspace
}

/**
 * Streams the session's updates to `sink` as its events are published: text and reasoning deltas, each tool call
 * when it is logged (pending), a file change's diff before the call is allowed (so a permission question can
 * show it), `in_progress` once it is allowed, and its result. Returns the disposer.
 */
export function streamUpdates(live: LiveSession, sink: UpdateSink): () => void {
  const diffs = new Map<string, ToolCallContent[]>()
  const offEvents = live.harness.hooks.on('session/event', ({ session, event }) => {
    // A sub-agent of this session runs on the same harness: only this session's own events are its updates.
    if (session.id !== live.sessionId) return
    switch (event.type) {
      case 'assistant/chunk': {
        const update = chunkUpdate((event.data as unknown as CoreEventData['assistant/chunk']).chunk)
        if (update !== undefined) sink(update)
        break
      }
      case 'tool/call':
        sink(toolCallAnnounced(event.data as unknown as CoreEventData['tool/call'], live.root))
        break
      case 'permission/decision': {
        const decision = event.data as unknown as PermissionDecisionData
        if (decision.decision === 'allow') sink({ sessionUpdate: 'tool_call_update', toolCallId: decision.callId, status: 'in_progress' })
        break
      }
      case 'tool/result': {
        const data = event.data as unknown as CoreEventData['tool/result']
        const callId = data.message.source.callId
        sink(toolCallFinished(data, diffs.get(callId) ?? []))
        diffs.delete(callId)
        break
      }
    }
  })
  // Outermost on the policy seam, so the diff is read and shown before the permission rules are consulted
  // (and before any question): the file's content then is what the call will change.
  const offDiff = live.harness.hooks.on(
    'tools/pre-execute',
    async (payload, next) => {
      if (payload.agent.id === live.sessionId && (payload.call.name === 'write_file' || payload.call.name === 'edit_file')) {
        const diff = await plannedDiff(live.workspace, live.root, payload.call.name, payload.call.arguments)
        if (diff !== undefined) {
          const content: ToolCallContent[] = [{ type: 'diff', ...diff }]
          diffs.set(payload.call.callId, content)
          sink({ sessionUpdate: 'tool_call_update', toolCallId: payload.call.callId, content })
        }
      }
      return next()
    },
    { prepend: true },
  )
  return () => {
    offEvents()
    offDiff()
  }
}
