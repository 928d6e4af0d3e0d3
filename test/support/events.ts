import type { ContentBlock } from '../../src/llm/types.js'
import type { SessionEvent } from '../../src/session/events.js'
import { HarnessError } from '../../src/errors/harness-error.js'

/** Plain (unfrozen) message data, the way a caller hands it to `session.append`. */
export function userData(text: string, id = `u-${text}`) {
  return { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
}

export function assistantData(content: ContentBlock[], id = 'a-1', turn = 1, step = 1) {
  return { turn, step, message: { id, role: 'assistant', content, source: { kind: 'model', provider: 'p', model: 'm' } } }
}

export function toolResultData(callId: string, text: string, id = `r-${callId}`, turn = 1, step = 1) {
  return {
    turn,
    step,
    message: { id, role: 'user', content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }] }], source: { kind: 'tool', callId } },
  }
}

/** Builds a raw log (for seeds and verify tests) from `[type, data, extra?]` triples: seq = index, time = 1000 + seq. */
export function rawLog(entries: readonly [string, unknown, Partial<SessionEvent>?][]): SessionEvent[] {
  return entries.map(([type, data, extra], seq) => ({ type, seq, time: 1000 + seq, data, ...extra }) as SessionEvent)
}

/** Runs `fn`, expects a HarnessError, returns it. */
export function harnessErrorOf(fn: () => unknown): HarnessError {
  try {
    fn()
  } catch (error) {
    if (!(error instanceof HarnessError)) throw new Error(`expected a HarnessError, got ${String(error)}`)
    return error
  }
  throw new Error('expected a throw')
}
