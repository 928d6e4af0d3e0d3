import type { HookBus } from '../hooks/hook-bus.js'
import type { StreamChunk } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { Session, SessionWiring } from '../session/session.js'
import { takesCompactRecords, type ChunkRecord, type SessionWriter, type TextRecord } from '../session/session-writer.js'
import type { LedgerHooks } from '../loop/hook-types.js'

// The one session ↔ writer adapter: what a Session commits goes to its store's writer as one record each
// (docs/stores.md, "The writer"), session/validate guards may veto it first, and session/event listeners and
// the agent hear of it after.

/** A record the adapter fills in place for each streamed chunk (the writer copies what it keeps). */
type Refilled<T> = { -readonly [K in keyof T]: T[K] }

// What the reused chunk record holds before its first chunk.
const EMPTY_CHUNK: StreamChunk = Object.freeze({ type: 'text-delta', index: 0, text: '' })

/**
 * Wires `session` to `writer`: validation by `session/validate` guards, persistence by the writer (compact
 * records for a writer that takes them, events otherwise), publication to `observe` and `session/event`.
 * Then offers the writer the session's own log (`SessionWriter.shareLog`).
 * @param observe - the agent's own reading of each published event
 */
export function wireSessionToWriter(session: Session, writer: SessionWriter, hooks: HookBus<LedgerHooks>, observe: (event: SessionEvent) => void): void {
  // Plugins installed later may add validators: resolve the guard per append instead of once.
  // Runs for every event (chunks included): build hook payloads only when someone listens.
  const wiring: SessionWiring = {
    validate: (s, event) => {
      if (hooks.has('session/validate')) hooks.guard('session/validate', { session: s, event }, s.id)
    },
    persist: (_s, event) => writer.append(event),
    // Chunks are not runtime-context snapshots (agent.observe ignores them): only listeners need their events.
    wantsChunkEvents: () => hooks.has('session/validate') || hooks.has('session/event'),
    publish: (s, event) => {
      observe(event)
      if (hooks.has('session/event')) hooks.emit('session/event', { session: s, event }, s.id)
    },
  }
  if (takesCompactRecords(writer)) {
    // One record of each kind per session, refilled for every chunk: a streamed delta allocates nothing here,
    // and each record keeps one shape. The writer reads it during `append` and keeps none of the object.
    const chunkRecord: Refilled<ChunkRecord> = { kind: 'chunk', seq: 0, time: 0, turn: 0, step: 0, chunk: EMPTY_CHUNK }
    const textRecord: Refilled<TextRecord> = { kind: 'text', seq: 0, time: 0, turn: 0, step: 0, type: 'text-delta', index: 0, text: '' }
    wiring.persistChunk = (_s, seq, time, turn, step, chunk) => {
      chunkRecord.seq = seq
      chunkRecord.time = time
      chunkRecord.turn = turn
      chunkRecord.step = step
      chunkRecord.chunk = chunk
      writer.append(chunkRecord)
    }
    wiring.persistText = (_s, seq, time, turn, step, type, index, text) => {
      textRecord.seq = seq
      textRecord.time = time
      textRecord.turn = turn
      textRecord.step = step
      textRecord.type = type
      textRecord.index = index
      textRecord.text = text
      writer.append(textRecord)
    }
  }
  session.wire(wiring)
  // A store that keeps sessions in memory holds this session's own log instead of a second copy.
  writer.shareLog?.(session.log)
}
