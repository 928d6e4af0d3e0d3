import type { NetworkPolicy } from '../tools/builtin/bash.js'
import { createHarness, type Harness } from '../agent/harness.js'
import { HarnessError } from '../errors/harness-error.js'
import { DEEPSEEK_MODELS } from '../llm/adapters/deepseek.js'
import type { ModelPricing } from '../llm/types.js'
import { compactionPlugin } from '../plugins/compaction.js'
import type { PermissionAnswer, PermissionQuestion } from '../plugins/permission.js'
import { permissionPlugin } from '../plugins/permission.js'
import { retryPlugin } from '../plugins/retry.js'
import { turnBudgetPlugin } from '../plugins/turn-budget.js'
import type { SessionStore } from '../store/types.js'
import { builtinTools } from '../tools/builtin/index.js'
import { formatCost, sessionCost, type PricingCatalogue } from '../views/cost.js'
import type { SessionEvent } from '../session/events.js'
import type { SandboxMode } from '../tools/builtin/sandbox.js'
import { CliError, EXIT } from './cli-error.js'
import { bashEnvOptions, type EffectiveConfig } from '../app/config.js'
import type { HarnessExtensions } from '../app/harness-extensions.js'
import type { ModelRoute } from '../app/providers.js'
import { openStore, parseStoreSpec, type StoreSpec } from '../app/store-spec.js'

/** The persona section of every CLI agent's system prompt (`{{cwd}}` is the tool root). */
export const CLI_SYSTEM_PROMPT =
  'You are ledgerloop, a coding and operations agent working in a terminal. Your workspace is {{cwd}}; every tool ' +
  'path is relative to it. Look before you change anything, keep changes small, and end with a short account of ' +
  'what you did.'

/** What a CLI harness is built from. */
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
  readonly ask?: (question: PermissionQuestion) => Promise<PermissionAnswer | { readonly answer: PermissionAnswer; readonly by: 'user' | 'flag' | 'auto' }>
  /** Text appended to the persona: `--system` and the project file (see project-instructions.ts). */
  readonly instructions?: string
  /** MCP tools and span export (see harness-extensions.ts); closed with the harness. */
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
 * A harness as the CLI runs it: the chosen store, the route's adapter, the built-in tools on the root, and the
 * retry, permission, turn-budget and compaction plugins; the request settings of the config (reasoning effort, output cap)
 * are applied to every request.
 */
export function createCliHarness(options: CliHarnessOptions): Harness {
  const { config, route } = options
  let tools
  try {
    tools = builtinTools({ root: options.root, shell: config.shell, sandbox: options.sandbox ?? 'bwrap', network: options.network ?? false, ...bashEnvOptions(config) })
  } catch (error) {
    if (error instanceof HarnessError) throw new CliError(`tool root ${options.root}: ${error.message}`, EXIT.usage)
    throw error
  }
  let budget
  try {
    budget = turnBudgetPlugin({ maxSteps: config.maxSteps, ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}) })
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage)
  }
  let permissions
  try {
    permissions = permissionPlugin({ rules: config.permissions, ...(options.ask !== undefined ? { ask: options.ask } : {}) })
  } catch (error) {
    throw new CliError(`${config.configFile}: field "permissions": ${(error as Error).message}`, EXIT.usage)
  }
  const extensions = options.extensions
  const harness = createHarness({
    store: options.store,
    adapters: [route.adapter],
    tools: [...tools, ...(extensions?.tools ?? [])],
    plugins: [retryPlugin(config.retry), permissions, budget, compactionPlugin(), ...(extensions?.plugins ?? [])],
    system: options.instructions !== undefined && options.instructions !== '' ? `${CLI_SYSTEM_PROMPT}\n\n${options.instructions}` : CLI_SYSTEM_PROMPT,
  })
  if (config.reasoningEffort !== undefined || config.maxOutputTokens !== undefined) {
    harness.hooks.on('agent/request', async (_payload, next) => {
      const proposed = await next()
      return {
        ...proposed,
        ...(config.reasoningEffort !== undefined ? { reasoningEffort: config.reasoningEffort } : {}),
        ...(config.maxOutputTokens !== undefined ? { maxTokens: config.maxOutputTokens } : {}),
      }
    })
  }
  if (extensions === undefined) return harness
  return {
    ...harness,
    async close() {
      try {
        await harness.close()
      } finally {
        await extensions.close()
      }
    },
  }
}
