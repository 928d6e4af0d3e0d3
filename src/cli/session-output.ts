import type { Harness } from '../agent/harness.js'
import type { SessionEvent } from '../session/events.js'
import { TranscriptRenderer } from './render.js'
import type { Style } from './style.js'

/** Where a running session's events go: a transcript for people, or JSONL for scripts. */
export interface SessionOutput {
  /** The transcript renderer (absent in `--json` mode). */
  readonly renderer: TranscriptRenderer | undefined
  /** Writes a notice line: into the transcript, or to stderr in `--json` mode (stdout stays pure JSONL). */
  notice(text: string): void
  /** Stops listening. */
  dispose(): void
}

/**
 * Follows the committed events of the session `currentId()` names (it changes when chat forks) and writes them
 * to `out`: as a transcript, or with `json` one event per line exactly as logged.
 */
export function attachSessionOutput(harness: Harness, currentId: () => string | undefined, out: NodeJS.WritableStream, style: Style, json: boolean): SessionOutput {
  const renderer = json ? undefined : new TranscriptRenderer(out, style)
  const write = (event: SessionEvent): void => {
    if (renderer !== undefined) renderer.handle(event)
    else out.write(`${JSON.stringify(event)}\n`)
  }
  const off = harness.hooks.on('session/event', ({ session, event }) => {
    if (session.id === currentId()) write(event)
  })
  return {
    renderer,
    notice(text) {
      if (renderer !== undefined) renderer.line(text)
      else process.stderr.write(`${text}\n`)
    },
    dispose() {
      off()
      renderer?.dispose()
    },
  }
}
