import type { HookBus } from '../hooks/hook-bus.js'
import type { SessionEvent } from '../session/events.js'
import type { Session, SessionWiring } from '../session/session.js'
import { takesCompactRecords, type SessionRecord, type SessionWriter } from '../session/session-writer.js'
import type { LedgerHooks } from '../loop/hook-types.js'

// The one session ↔ writer adapter: what a Session commits goes to its store's writer as one record each
// (docs/stores.md, "The writer"), session/validate guards may veto it first, and session/event listeners and
// the agent hear of it after.

/**
 * Wires `session` to `writer`: validation by `session/validate` guards, persistence by the writer (compact
 * records for a writer that takes them, events otherwise), publication to `observe` and `session/event`.
 * Then offers the writer the session's own log (`SessionWriter.shareLog`).
 * @param observe - the agent's own reading of each published event
 */
export function wireSessionToWriter(session: Session, writer: SessionWriter, hooks: HookBus<LedgerHooks>, observe: (event: SessionEvent) => void): void {
  const compact = takesCompactRecords(writer)
  // A session hands compact records only to a wiring that says it takes them, so a writer that takes events
  // only never sees one: the widening below is what `compactRecords` promises.
  const target = writer as SessionWriter<SessionRecord>
  // Plugins installed later may add validators: resolve the guard per append instead of once.
  // Runs for every event (chunks included): build hook payloads only when someone listens.
  const wiring: SessionWiring = {
    validate: (s, event) => {
      if (hooks.has('session/validate')) hooks.guard('session/validate', { session: s, event }, s.id)
    },
    persist: (_s, record) => target.append(record),
    compactRecords: compact,
    // Chunks are not runtime-context snapshots (agent.observe ignores them): only listeners need their events.
    wantsChunkEvents: () => hooks.has('session/validate') || hooks.has('session/event'),
    publish: (s, event) => {
      observe(event)
      if (hooks.has('session/event')) hooks.emit('session/event', { session: s, event }, s.id)
    },
  }
  session.wire(wiring)
  // A store that keeps sessions in memory holds this session's own log instead of a second copy.
  writer.shareLog?.(session.log)
}
