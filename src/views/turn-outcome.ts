import type { TokenUsage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { EXIT } from '../cli/cli-error.js'

/** Input/output token totals of a turn (or a request), with the prompt-cache share. */
export interface UsageTotals {
  /** All input tokens: uncached + cache reads + cache writes. */
  input: number
  output: number
  cacheRead: number
}

/** An empty total. */
export function emptyUsage(): UsageTotals {
  return { input: 0, output: 0, cacheRead: 0 }
}

/** Adds one completion's usage (providers report uncached input and cache reads as separate buckets). */
export function addUsage(total: UsageTotals, usage: TokenUsage | undefined): void {
  if (usage === undefined) return
  total.input += usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)
  total.output += usage.outputTokens
  total.cacheRead += usage.cacheReadTokens ?? 0
}

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
 * What to do about a failed turn, where the failure tells: a wrong base URL (an endpoint that does not stream,
 * or a 404), a missing or rejected key, a stalled server.
 */
export function failureHint(reason: TurnEndReason, route: { readonly baseURL?: string }): string | undefined {
  if (reason.kind !== 'error') return undefined
  const { code, status } = reason.error
  if (code === 'NOT_STREAMING' || (code === 'BAD_REQUEST' && status === 404)) {
    const base = route.baseURL
    if (base !== undefined && !/\/v\d+\/?$/.test(base)) return `--base-url probably lacks /v1 (try ${base.replace(/\/+$/, '')}/v1)`
    return 'check --base-url: the server there is not an OpenAI-format (or Anthropic-format) streaming endpoint'
  }
  if (code === 'AUTH') return 'check the API key (ledgerloop config shows which variable is read)'
  if (code === 'TIMEOUT') return 'the server went silent; raise --idle-timeout SECONDS if it is just slow'
  if (code === 'INSUFFICIENT_BALANCE') return "top up the provider account; retrying cannot help"
  return undefined
}

/** The exit code for a turn end: 0 completed/max-tokens, 130 cancelled by the user, else 1. */
export function exitCodeFor(reason: TurnEndReason): number {
  if (reason.kind === 'completed' || reason.kind === 'max-tokens') return EXIT.ok
  if (reason.kind === 'aborted' && reason.reason.kind === 'user') return EXIT.interrupted
  return EXIT.failed
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
