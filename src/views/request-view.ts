import type { JsonValue } from '../json/lossless.js'
import type { LlmCallConfig, Message, ToolSchema } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { foldSession } from '../session/fold.js'
import { loggedRequests, type LoggedRequest } from './request-reconstruction.js'

/**
 * One model request rebuilt from the log prefix before its first chunk: exactly what the loop sent (the
 * canonical header's config, system prompt and tools, and the folded message history).
 */
export interface RebuiltRequest {
  /** 1-based position among the session's logged requests. */
  readonly n: number
  readonly turn: number
  readonly step: number
  /** Seq of the request's first streamed chunk; the request was built from events `0 … firstSeq - 1`. */
  readonly firstSeq: number
  readonly lastSeq: number
  /** The finish kind of its stream (`stop`, `tool-calls`, …), when it finished. */
  readonly finish: string | undefined
  /** Provider, model and sampling settings; `undefined` when no `request/header` precedes it (a broken log). */
  readonly config: LlmCallConfig | undefined
  readonly system: string | undefined
  readonly tools: readonly ToolSchema[]
  readonly messages: readonly Message[]
}

/** How one config field changed between two requests. */
export interface ConfigChange {
  readonly key: string
  readonly before: JsonValue | undefined
  readonly after: JsonValue | undefined
}

/**
 * What changed from one request to the next, and how much of the new one a provider's prompt cache can reuse.
 * Providers cache a prefix in the order tools → system → messages, per model: the stable prefix ends at the
 * first difference in that order.
 */
export interface RequestDiff {
  /** `n` of the earlier request. */
  readonly from: number
  /** `n` of the later request. */
  readonly to: number
  readonly config: readonly ConfigChange[]
  readonly systemChanged: boolean
  readonly tools: { readonly added: readonly string[]; readonly removed: readonly string[]; readonly changed: readonly string[] }
  /** Messages both requests start with, in order. */
  readonly commonMessages: number
  /** Messages of the earlier request after the common run (dropped or rewritten, e.g. by compaction). */
  readonly removedMessages: number
  /** The later request's messages after the common run. */
  readonly addedMessages: readonly Message[]
  /** The prefix a prompt cache can reuse: whole tools and system, and the first `messages` messages. */
  readonly stablePrefix: { readonly tools: boolean; readonly system: boolean; readonly messages: number }
}

/** The number of model requests the log shows (one per run of streamed chunks). */
export function requestCount(events: readonly SessionEvent[]): number {
  return loggedRequests(events).length
}

/**
 * Rebuilds the `n`-th (1-based) logged request from the log, or `undefined` when there is no such request.
 * @example
 * ```ts
 * const first = rebuildRequest(stored.events, 1)
 * console.log(first?.config?.model, first?.messages.length)
 * ```
 */
export function rebuildRequest(events: readonly SessionEvent[], n: number): RebuiltRequest | undefined {
  return rebuildLogged(events, loggedRequests(events), n)
}

/**
 * Rebuilds the `n`-th request and its diff from the `n - 1`-th (`diff` is `undefined` for the first request).
 * Both come from one scan of the log for request boundaries.
 */
export function requestWithDiff(events: readonly SessionEvent[], n: number): { request: RebuiltRequest; diff: RequestDiff | undefined; count: number } | undefined {
  const logged = loggedRequests(events)
  const request = rebuildLogged(events, logged, n)
  if (request === undefined) return undefined
  const previous = n > 1 ? rebuildLogged(events, logged, n - 1) : undefined
  return { request, diff: previous === undefined ? undefined : diffRequests(previous, request), count: logged.length }
}

function rebuildLogged(events: readonly SessionEvent[], logged: readonly LoggedRequest[], n: number): RebuiltRequest | undefined {
  if (!Number.isSafeInteger(n) || n < 1) return undefined
  const at = logged[n - 1]
  if (at === undefined) return undefined
  const { messages, header } = foldSession(events.slice(0, at.firstSeq))
  return {
    n,
    turn: at.turn,
    step: at.step,
    firstSeq: at.firstSeq,
    lastSeq: at.lastSeq,
    finish: at.finish,
    config: header?.config,
    system: header?.system,
    tools: header?.tools ?? [],
    messages,
  }
}

/** Compares two rebuilt requests (see {@link RequestDiff}). */
export function diffRequests(before: RebuiltRequest, after: RebuiltRequest): RequestDiff {
  const config: ConfigChange[] = []
  const a = (before.config ?? {}) as unknown as Record<string, JsonValue | undefined>
  const b = (after.config ?? {}) as unknown as Record<string, JsonValue | undefined>
  for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) config.push({ key, before: a[key], after: b[key] })
  }
  const toolsBefore = new Map(before.tools.map((t) => [t.name, JSON.stringify(t)]))
  const toolsAfter = new Map(after.tools.map((t) => [t.name, JSON.stringify(t)]))
  const added = [...toolsAfter.keys()].filter((name) => !toolsBefore.has(name))
  const removed = [...toolsBefore.keys()].filter((name) => !toolsAfter.has(name))
  const changed = [...toolsAfter.keys()].filter((name) => toolsBefore.has(name) && toolsBefore.get(name) !== toolsAfter.get(name))
  let common = 0
  const limit = Math.min(before.messages.length, after.messages.length)
  while (common < limit && JSON.stringify(before.messages[common]) === JSON.stringify(after.messages[common])) common++
  // A cache is per model and keyed on the exact serialised order, so any earlier difference ends the prefix.
  const sameModel = before.config?.provider === after.config?.provider && before.config?.model === after.config?.model
  const toolsStable = sameModel && JSON.stringify(before.tools) === JSON.stringify(after.tools)
  const systemStable = toolsStable && before.system === after.system
  return {
    from: before.n,
    to: after.n,
    config,
    systemChanged: before.system !== after.system,
    tools: { added, removed, changed },
    commonMessages: common,
    removedMessages: before.messages.length - common,
    addedMessages: after.messages.slice(common),
    stablePrefix: { tools: toolsStable, system: systemStable, messages: systemStable ? common : 0 },
  }
}
