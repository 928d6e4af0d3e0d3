import type { UsageTotals } from '../llm/token-usage.js'
import type { LlmFailure } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'

/** `1,234 in (1,000 cache hits) · 56 out`. */
export function formatUsage(total: UsageTotals): string {
  const n = (v: number): string => v.toLocaleString('en-US')
  return `${n(total.input)} in${total.cacheRead > 0 ? ` (${n(total.cacheRead)} cache hits)` : ''} · ${n(total.output)} out`
}

/** `850 ms`, `2.3 s`, `1 m 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`
}

/** A person-readable turn end: says which budget ended a turn and who cancelled it. */
export function describeReason(reason: TurnEndReason): string {
  switch (reason.kind) {
    case 'completed':
      return 'completed'
    case 'max-tokens':
      return 'max-tokens (the reply hit the output token limit and was cut off)'
    case 'blocked':
      return 'blocked (a plugin refused to start the step)'
    case 'interrupted':
      return 'interrupted (closed by crash repair)'
    case 'error':
      return `error ${reason.error.code}: ${reason.error.message}`
    case 'aborted':
      switch (reason.reason.kind) {
        case 'user':
          return 'aborted (cancelled by you)'
        case 'hook':
          return `aborted by ${reason.reason.reason}`
        case 'parent':
          return 'aborted (cancelled by the parent agent)'
        case 'disposed':
          return 'aborted (the agent was shut down)'
      }
  }
}

/**
 * How a turn ended, reduced to what a caller acts on: `succeeded` (completed, or cut off at the output token
 * limit: the reply is there), `cancelled` (by the person at the keyboard) or `failed` (an error, a refused step,
 * crash repair, a budget or a parent's cancel). A fact, not an exit code: src/cli/turn-exit.ts maps it to one.
 */
export type TurnVerdict = 'succeeded' | 'cancelled' | 'failed'

/** The {@link TurnVerdict} of a turn end. */
export function turnVerdict(reason: TurnEndReason): TurnVerdict {
  if (reason.kind === 'completed' || reason.kind === 'max-tokens') return 'succeeded'
  if (reason.kind === 'aborted' && reason.reason.kind === 'user') return 'cancelled'
  return 'failed'
}

/** The failure a turn that ended `error` ended with (code, HTTP status when a server answered, message), else undefined. */
export function turnFailure(reason: TurnEndReason): LlmFailure | undefined {
  return reason.kind === 'error' ? reason.error : undefined
}

/** The reason of the last `turn/end` in a log, if any. */
export function lastTurnReason(events: readonly SessionEvent[]): TurnEndReason | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent
    if (e.type === 'turn/end') return (e.data as { reason: TurnEndReason }).reason
  }
  return undefined
}

const SUBJECT_KEYS = ['command', 'path', 'pattern'] as const

/** The short thing a tool call is about: its command, path or pattern, else its arguments clipped. */
export function toolSubject(rawArguments: string): string {
  try {
    const args = JSON.parse(rawArguments) as Record<string, unknown>
    if (typeof args === 'object' && args !== null) {
      for (const key of SUBJECT_KEYS) if (typeof args[key] === 'string') return clip(args[key] as string, 60)
      if (Object.keys(args).length === 0) return ''
    }
  } catch {
    // Not JSON: the model sent something the tool will reject; show it as is.
  }
  return clip(rawArguments, 60)
}

/** Clips text to one line of at most `max` characters. */
export function clip(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}
