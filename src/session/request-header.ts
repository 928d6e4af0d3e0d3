// The logged request header (the seed's `request/header` event): its canonical form, equality, the latest one in
// a log, and the proposal a later request starts from. The config copy is the registry's (llm/ is below session/).
import type { AdapterDefaults, LlmCallConfig, ToolSchema } from '../llm/types.js'
import { callConfigEquals, copyCallConfig } from '../llm/registry.js'
import type { RequestHeader, SessionEvent } from './events.js'

/**
 * The canonical header: `adapterDefaults` kept only with at least one `true` marker, empty `system` and empty
 * `tools` omitted, config keys in a fixed order with absent fields omitted. Equal headers serialise equally.
 */
export function canonicalHeader(input: {
  config: LlmCallConfig
  adapterDefaults?: AdapterDefaults | undefined
  system?: string | undefined
  tools?: readonly ToolSchema[] | undefined
}): RequestHeader {
  // The registry's copy: the logged config has the same fields in the same order as a prepared call's.
  const config: LlmCallConfig = copyCallConfig(input.config)
  const d = input.adapterDefaults
  const defaults: AdapterDefaults = {
    ...(d?.reasoningEffort === true ? { reasoningEffort: true } : {}),
    ...(d?.maxTokens === true ? { maxTokens: true } : {}),
  }
  return {
    config,
    ...(Object.keys(defaults).length > 0 ? { adapterDefaults: defaults } : {}),
    ...(input.system !== undefined && input.system !== '' ? { system: input.system } : {}),
    ...(input.tools !== undefined && input.tools.length > 0 ? { tools: input.tools } : {}),
  }
}

/**
 * Header equality: call config field by field, both markers, system, and tools pairwise by JSON text — unless
 * they are the same list or the same schema. That is the loop's every step, with no cache: it hands over the
 * tool registry's frozen list of deep-frozen schemas, and the log adopts deep-frozen values as they are
 * (`snapshotJsonFrozen`), so the logged header holds that very list and the comparison is one identity check.
 */
export function headerEquals(a: RequestHeader | undefined, b: RequestHeader | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  if (!callConfigEquals(a.config, b.config)) return false
  if (a.adapterDefaults?.maxTokens !== b.adapterDefaults?.maxTokens) return false
  if (a.adapterDefaults?.reasoningEffort !== b.adapterDefaults?.reasoningEffort) return false
  if (a.system !== b.system) return false
  const ta = a.tools ?? []
  const tb = b.tools ?? []
  if (ta === tb) return true
  if (ta.length !== tb.length) return false
  for (let i = 0; i < ta.length; i++) {
    const t = ta[i] as ToolSchema
    const u = tb[i] as ToolSchema
    if (t === u) continue
    if (JSON.stringify(t) !== JSON.stringify(u)) return false
  }
  return true
}

/** The latest logged header over `events` (what the next request's header must equal). */
export function foldRequestHeader(events: readonly SessionEvent[]): RequestHeader | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent
    if (e.type === 'request/header') return (e.data as unknown as { header: RequestHeader }).header
  }
  return undefined
}

/**
 * The route proposal for a later request: the config minus every field an adapter filled in, so a new route
 * re-materialises its own defaults while explicit values survive route switches, and minus `output`: a
 * structured-output mode belongs to one run's turn, whose `agent/request` listener sets it on each request.
 */
export function requestProposal(header: RequestHeader): LlmCallConfig {
  const { config, adapterDefaults } = header
  const out: { -readonly [K in keyof LlmCallConfig]: LlmCallConfig[K] } = { ...config }
  if (adapterDefaults?.maxTokens === true) delete out.maxTokens
  if (adapterDefaults?.reasoningEffort === true) delete out.reasoningEffort
  delete out.output
  return out
}
