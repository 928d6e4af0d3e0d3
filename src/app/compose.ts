// Owns the composition of an agent from a resolved configuration: which tools and plugins every entry point
// (run, chat, serve, worker) installs, in which order, with which settings. Before issue 23 each entry point
// composed its own agent and they drifted apart (a session that compacted under `run` overflowed under
// `worker`); now there is one recipe, and an entry point only says how permission questions are answered.
import type { LedgerHooks } from '../loop/hook-types.js'
import { createHarness, type Harness, type HarnessOptions } from '../harness/harness.js'
import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { LlmAdapter, ModelPricing } from '../llm/types.js'
import { compactionPlugin } from '../plugins/compaction/compaction.js'
import { costBudgetPlugin } from '../plugins/cost-budget.js'
import { permissionPlugin, type AttributedAnswer, type PermissionAnswer, type PermissionQuestion, type PermissionRules } from '../plugins/permission.js'
import { retryPlugin } from '../plugins/retry.js'
import { turnBudgetPlugin } from '../plugins/turn-budget.js'
import type { SessionStore } from '../store/types.js'
import type { NetworkPolicy } from '../tools/builtin/bash.js'
import { builtinTools } from '../tools/builtin/index.js'
import type { SandboxMode } from '../tools/builtin/sandbox.js'
import type { ToolDefinition } from '../tools/types.js'
import { bashEnvOptions, type EffectiveConfig } from './config.js'
import type { HarnessExtensions } from './harness-extensions.js'
import type { ModelRoute } from './providers.js'
import { requestSettingsOf, requestSettingsPlugin, type RequestSettings } from './request-settings.js'
import { UsageError } from './usage-error.js'

/** The persona section of every ledgerloop agent's system prompt (`{{cwd}}` is the tool root). */
export const CLI_SYSTEM_PROMPT =
  'You are ledgerloop, a coding and operations agent working in a terminal. Your workspace is {{cwd}}; every tool ' +
  'path is relative to it. Look before you change anything, keep changes small, and end with a short account of ' +
  'what you did.'

/** Answers a permission question (a person at a terminal, or a rule of the entry point). */
export type PermissionAsk = (question: PermissionQuestion) => Promise<PermissionAnswer | AttributedAnswer>

/**
 * How an entry point answers the permission questions the rules leave at `ask`: the only part of the
 * composition that differs between entry points, because only they know who is there to answer.
 * - `ask`: a person answers (run and chat on a terminal, or a rule such as the scripted demo's);
 * - `yes`: `--yes` approved every question in advance;
 * - `deny`: no one can answer, every question is denied;
 * - `store`: questions wait in the PostgreSQL store until someone answers them through `serve` (worker
 *   `--remote-approvals`): the worker shell builds that plugin (worker/store-approvals.ts), a layer above this one;
 * - `host`: the server's session host installs the permission plugin and asks through its API (serve, local sessions).
 */
export type Approvals =
  | { readonly kind: 'ask'; readonly ask: PermissionAsk }
  | { readonly kind: 'yes' }
  | { readonly kind: 'deny' }
  | { readonly kind: 'store'; readonly plugin: Plugin<HookRegistrar<LedgerHooks>> }
  | { readonly kind: 'host'; readonly yes: boolean }

/** What {@link compose} is given: a resolved configuration and what the entry point decided around it. */
export interface CompositionRequest {
  readonly config: EffectiveConfig
  /** The model route; `adapters` replaces its adapter (a recorded or scripted model, as a replay needs). */
  readonly route: Pick<ModelRoute, 'adapter'>
  readonly adapters?: readonly LlmAdapter[]
  /** Tool root (absolute, must exist). */
  readonly root: string
  /** Where `bash` runs (default bwrap) and whether it keeps the network (default false). */
  readonly sandbox?: SandboxMode
  readonly network?: NetworkPolicy
  readonly approvals: Approvals
  /** Text appended to the persona: `--system` and the project file (see project-instructions.ts). */
  readonly instructions?: string
  /** MCP tools and span export (see harness-extensions.ts); closed with {@link Composition.close}. */
  readonly extensions?: HarnessExtensions
}

/** What a composition installed, by name: what the entry-point test compares across run, chat, serve and worker. */
export interface InstalledParts {
  /** Plugin names in installation order (a `host` permission plugin is listed where the host adds it: last). */
  readonly plugins: readonly string[]
  readonly tools: readonly string[]
  /** The request settings applied to every model request. */
  readonly requestSettings: RequestSettings
  /** How permission questions are answered. */
  readonly approvals: Approvals['kind']
}

/** A composed agent, before a store is chosen: the harness options plus what they hold. */
export interface Composition {
  /** Adapters, tools, plugins and system prompt, ready for `createHarness`, `runWorker` or `createLedgerServer`. */
  readonly options: Omit<HarnessOptions, 'store'>
  /** With `host` approvals: the rules the server's session host installs its permission plugin with. */
  readonly hostPermissions?: PermissionRules
  readonly installed: InstalledParts
  /** Sends the last spans and stops the MCP servers. */
  close(): Promise<void>
}

/**
 * The one composition of ledgerloop's entry points: the built-in tools on the root (sandbox, network and
 * `bashEnv` included) plus MCP tools; the retry, permission (answered as `approvals` says), turn-budget,
 * cost-budget (enforcing `--max-cost`, or a session's own recorded cap) and compaction plugins, telemetry, and the request settings of the config (reasoning effort, output cap); the
 * persona with the project instructions. Flags and config keys therefore mean the same thing everywhere.
 * @throws UsageError when the tool root, the permission rules or the budget are not usable
 */
export function compose(request: CompositionRequest): Composition {
  const { config, approvals } = request
  let tools: ToolDefinition<never>[]
  try {
    tools = builtinTools({ root: request.root, shell: config.shell, sandbox: request.sandbox ?? 'bwrap', network: request.network ?? false, ...bashEnvOptions(config) })
  } catch (error) {
    if (error instanceof HarnessError) throw new UsageError(`tool root ${request.root}: ${error.message}`)
    throw error
  }
  let budget: Plugin<HookRegistrar<LedgerHooks>>
  try {
    budget = turnBudgetPlugin({ maxSteps: config.maxSteps, ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}) })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const cost = costBudgetOf(config)
  const permissions = permissionsOf(config, approvals)
  const settings = requestSettingsOf(config)
  const extensions = request.extensions
  const plugins: Plugin<HookRegistrar<LedgerHooks>>[] = [
    retryPlugin(config.retry),
    ...(permissions !== undefined ? [permissions] : []),
    budget,
    cost,
    compactionPlugin(),
    ...(extensions?.plugins ?? []),
    ...(Object.keys(settings).length > 0 ? [requestSettingsPlugin(settings)] : []),
  ]
  const allTools = [...tools, ...(extensions?.tools ?? [])]
  const instructions = request.instructions
  const options: Omit<HarnessOptions, 'store'> = {
    adapters: request.adapters ?? [request.route.adapter],
    tools: allTools,
    plugins,
    system: instructions !== undefined && instructions !== '' ? `${CLI_SYSTEM_PROMPT}\n\n${instructions}` : CLI_SYSTEM_PROMPT,
  }
  return {
    options,
    ...(approvals.kind === 'host' ? { hostPermissions: approvals.yes ? { allow: ['*'] } : config.permissions } : {}),
    installed: {
      plugins: [...plugins.map((p) => p.name), ...(approvals.kind === 'host' ? [PERMISSION_PLUGIN] : [])],
      tools: allTools.map((t) => t.name),
      requestSettings: settings,
      approvals: approvals.kind,
    },
    close: async () => {
      await extensions?.close()
    },
  }
}

/**
 * {@link compose} over a store, as a harness (run, chat): closing the harness also closes the extensions.
 * @throws UsageError as {@link compose} does
 */
export function composeHarness(request: CompositionRequest & { readonly store: SessionStore }): Harness {
  const composition = compose(request)
  const harness = createHarness({ ...composition.options, store: request.store })
  if (request.extensions === undefined) return harness
  return {
    ...harness,
    async close() {
      try {
        await harness.close()
      } finally {
        await composition.close()
      }
    },
  }
}

/**
 * The cost budget of `--max-cost` / `maxCostUsd`, priced by the config file's `pricing` overrides (by
 * `provider/model`, then by model) and a configured provider's model table; the plugin itself falls back to
 * each adapter's published prices (the built-in DeepSeek table). Installed without a cap too: a session created
 * with its own cap (`POST /api/sessions` with `maxCostUsd`) is held to it by `run`/`chat --session` as well,
 * and a budget with nothing to enforce only reads the log.
 */
function costBudgetOf(config: EffectiveConfig): Plugin<HookRegistrar<LedgerHooks>> {
  const pricing = (provider: string, model: string): ModelPricing | undefined => {
    const override = config.pricing[`${provider}/${model}`] ?? config.pricing[model]
    if (override !== undefined) return override
    const table = config.providers[provider]?.models
    return table !== undefined && Object.hasOwn(table, model) ? table[model]?.pricing : undefined
  }
  try {
    return costBudgetPlugin({ ...(config.maxCostUsd !== undefined ? { maxUsd: config.maxCostUsd } : {}), pricing })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

// The name the server's session host installs its permission plugin under (plugins/permission.ts).
const PERMISSION_PLUGIN = 'ledgerloop/permission'

function permissionsOf(config: EffectiveConfig, approvals: Approvals): Plugin<HookRegistrar<LedgerHooks>> | undefined {
  try {
    switch (approvals.kind) {
      case 'host':
        return undefined
      case 'store':
        return approvals.plugin
      case 'ask':
        return permissionPlugin({ rules: config.permissions, ask: approvals.ask })
      case 'yes':
        return permissionPlugin({ rules: config.permissions, ask: async () => ({ answer: 'yes', by: 'flag' }) })
      case 'deny':
        return permissionPlugin({ rules: config.permissions })
    }
  } catch (error) {
    throw new UsageError(`${config.configFile}: field "permissions": ${(error as Error).message}`)
  }
}
