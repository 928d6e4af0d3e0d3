import type { Harness } from '../harness/harness.js'
import { DEEPSEEK_MODELS } from '../llm/adapters/deepseek.js'
import type { ModelPricing } from '../llm/types.js'
import type { SessionStore } from '../store/types.js'
import type { NetworkPolicy } from '../tools/builtin/bash.js'
import type { SandboxMode } from '../tools/builtin/sandbox.js'
import { formatCost, sessionCost, type PricingCatalogue } from '../views/cost.js'
import type { SessionEvent } from '../session/events.js'
import { composeHarness, type PermissionAsk } from '../app/compose.js'
import type { EffectiveConfig } from '../app/config.js'
import type { HarnessExtensions } from '../app/harness-extensions.js'
import type { ModelRoute } from '../app/providers.js'
import { openStore, parseStoreSpec, type StoreSpec } from '../app/store-spec.js'

// The persona moved to app/compose.ts with the composition; re-exported for the CLI modules that show it.
export { CLI_SYSTEM_PROMPT } from '../app/compose.js'

/** What a CLI harness is built from (run, chat). */
export interface CliHarnessOptions {
  readonly config: EffectiveConfig
  readonly route: ModelRoute
  /** Tool root (absolute, must exist). */
  readonly root: string
  /** The opened session store. */
  readonly store: SessionStore
  /** Where `bash` runs (default bwrap) and whether it keeps the network (default false). */
  readonly sandbox?: SandboxMode
  readonly network?: NetworkPolicy
  /** Answers permission questions; absent = asks are denied (non-interactive without --yes). */
  readonly ask?: PermissionAsk
  /** Text appended to the persona: `--system` and the project file (see app/project-instructions.ts). */
  readonly instructions?: string
  /** MCP tools and span export (see app/harness-extensions.ts); closed with the harness. */
  readonly extensions?: HarnessExtensions
}

/** Where the CLI keeps sessions: the `--store` spec (default: the JSONL folder `$LEDGERLOOP_HOME/sessions`). */
export function storeSpecOf(config: EffectiveConfig): StoreSpec {
  return parseStoreSpec(config.store)
}

/** The session store of the CLI, as `--store` (or its default) names it. */
export function cliStore(config: EffectiveConfig): Promise<SessionStore> {
  return openStore(storeSpecOf(config))
}

/**
 * Prices for cost figures: the config file's `pricing` (by `provider/model`, then by model) over the model
 * table of the route's provider (built-in DeepSeek prices, or `models.*.pricing` of a configured provider).
 */
export function cliPricing(config: EffectiveConfig): PricingCatalogue {
  return (provider: string, model: string): ModelPricing | undefined => {
    const override = config.pricing[`${provider}/${model}`] ?? config.pricing[model]
    if (override !== undefined) return override
    const spec = config.providers[provider]
    const table = spec?.models ?? (spec?.type === 'deepseek' ? DEEPSEEK_MODELS : undefined)
    return table !== undefined && Object.hasOwn(table, model) ? table[model]?.pricing : undefined
  }
}

/** The footer's cost figure for a slice of events (a turn), or undefined when nothing in it could be priced. */
export function costFigure(events: readonly SessionEvent[], catalogue: PricingCatalogue): string | undefined {
  const cost = sessionCost(events, catalogue)
  if (cost.currency === undefined) return undefined
  return `${formatCost(cost.total, cost.currency)}${cost.requests.some((r) => r.offPeak) ? ' (off-peak)' : ''}`
}

/**
 * A harness as `run` and `chat` run it: the one composition of every entry point (app/compose.ts), with
 * questions answered by `ask` (a person, `--yes`) or denied.
 * @throws UsageError when the tool root, the permission rules or the budget are not usable
 */
export function createCliHarness(options: CliHarnessOptions): Harness {
  return composeHarness({
    config: options.config,
    route: options.route,
    root: options.root,
    store: options.store,
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.network !== undefined ? { network: options.network } : {}),
    approvals: options.ask !== undefined ? { kind: 'ask', ask: options.ask } : { kind: 'deny' },
    ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
    ...(options.extensions !== undefined ? { extensions: options.extensions } : {}),
  })
}
