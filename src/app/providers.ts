import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { anthropicAdapter } from '../llm/adapters/anthropic.js'
import { deepseekAdapter } from '../llm/adapters/deepseek.js'
import { openaiCompatibleAdapter } from '../llm/adapters/openai-compatible.js'
import { scriptedAdapter, type ScriptedAdapterOptions, type ScriptStep } from '../llm/adapters/scripted.js'
import type { LlmAdapter } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { foldRequestHeader } from '../session/request-header.js'
import { UsageError } from './usage-error.js'
import type { EffectiveConfig, ProviderSpec } from './config.js'

/** The provider route of `--script` runs. */
export const SCRIPTED_PROVIDER = 'scripted'

/** A demo command line shown whenever the user needs a way to try ledgerloop without a key. */
export const DEMO_HINT = 'ledgerloop run --demo'

/** The model route a command talks to. */
export interface ModelRoute {
  readonly provider: string
  readonly model: string
  readonly adapter: LlmAdapter
  /** Absolute path of the script when the model is scripted (an offline demo, not a real model). */
  readonly scriptFile?: string
  /** The endpoint, when it is not the provider's default. */
  readonly baseURL?: string
}

/** The spec of a named provider, or a usage error listing the known ones. */
export function providerSpec(config: EffectiveConfig, name: string): ProviderSpec {
  const spec = config.providers[name]
  if (spec === undefined) {
    throw new UsageError(`unknown provider '${name}'; known: ${Object.keys(config.providers).join(', ')} (add others under "providers" in ${config.configFile})`)
  }
  return spec
}

/**
 * Fails with ONE clear message when the provider needs a key that is not set. Called before any session is
 * created, so a missing key leaves nothing behind. The message names the variable, never a value.
 */
export function requireApiKey(name: string, spec: ProviderSpec, env: NodeJS.ProcessEnv = process.env): void {
  if (!spec.keyRequired || spec.apiKeyEnv === undefined) return
  const value = env[spec.apiKeyEnv]
  if (value !== undefined && value !== '') return
  throw new UsageError(
    `${spec.apiKeyEnv} is not set: the '${name}' provider needs an API key.\n` +
      `  Set it (export ${spec.apiKeyEnv}=...), pick another provider with --provider, or try the offline demo\n` +
      `  with a scripted model and no key:  ${DEMO_HINT}`,
  )
}

/** Transport settings of a real provider route. */
export interface TransportSettings {
  /** Idle-stream watchdog. */
  readonly idleTimeoutMs?: number
  /** How long to wait for the server's response (status and headers) before giving up on the attempt. */
  readonly responseTimeoutMs?: number
  /** Extra HTTP headers. */
  readonly headers?: Readonly<Record<string, string>>
}

/** Builds the adapter of a real provider route. Keys are read from the environment only. */
export function providerAdapter(
  name: string,
  spec: ProviderSpec,
  baseURL: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  transport: TransportSettings = {},
): LlmAdapter {
  const base = baseURL ?? spec.baseURL
  const key = spec.apiKeyEnv !== undefined && env[spec.apiKeyEnv] !== undefined && env[spec.apiKeyEnv] !== '' ? env[spec.apiKeyEnv] : undefined
  const common = {
    ...(key !== undefined ? { apiKey: key } : {}),
    ...(spec.models !== undefined ? { models: spec.models } : {}),
    ...(transport.idleTimeoutMs !== undefined ? { idleTimeoutMs: transport.idleTimeoutMs } : {}),
    ...(transport.responseTimeoutMs !== undefined ? { responseTimeoutMs: transport.responseTimeoutMs } : {}),
    ...(transport.headers !== undefined && Object.keys(transport.headers).length > 0 ? { headers: transport.headers } : {}),
  }
  switch (spec.type) {
    case 'deepseek':
      return renamed(deepseekAdapter({ ...common, ...(base !== undefined ? { baseURL: base } : {}) }), name)
    case 'anthropic':
      return renamed(anthropicAdapter({ ...common, ...(base !== undefined ? { baseURL: base } : {}) }), name)
    case 'openai':
      if (base === undefined) throw new UsageError(`provider '${name}' needs a base URL (--base-url URL, or "baseURL" in the config file)`)
      return openaiCompatibleAdapter({ ...common, provider: name, baseURL: base })
  }
}

// The registry routes by `adapter.provider`: a config-named route of a fixed-name family answers to its own name.
function renamed(adapter: LlmAdapter, name: string): LlmAdapter {
  if (adapter.provider === name) return adapter
  return {
    provider: name,
    ...(adapter.retryPolicy !== undefined ? { retryPolicy: adapter.retryPolicy } : {}),
    resolveModel: (model) => adapter.resolveModel?.(model),
    stream: (request) => adapter.stream(request),
  }
}

/**
 * Reads a `--script` file: a JSON array of ScriptSteps. Relative paths resolve against the cwd.
 * @throws UsageError when the file is missing or not such an array
 */
export function loadScript(file: string, cwd: string = process.cwd()): { path: string; steps: ScriptStep[] } {
  const path = resolve(cwd, file)
  let value: unknown
  try {
    value = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new UsageError(code === 'ENOENT' ? `script file ${path} does not exist` : `script file ${path} is not valid JSON: ${(error as Error).message}`)
  }
  if (!Array.isArray(value) || value.some((s) => typeof s !== 'object' || s === null || Array.isArray(s))) {
    throw new UsageError(`script file ${path} must be a JSON array of script steps ({text?, reasoning?, toolCalls?, ...}, {error}, {hang: true})`)
  }
  return { path, steps: value as ScriptStep[] }
}

/** How a scripted route plays its file's steps (default: as they are, walked once through one session). */
export interface ScriptPlay {
  /** Turns the file's steps into the adapter's script (the worker replays them in every turn of every session). */
  readonly script?: (steps: readonly ScriptStep[]) => ScriptedAdapterOptions['script']
  /** Keep every request in the adapter (default true; a worker serving many sessions turns it off). */
  readonly recordRequests?: boolean
}

/** The scripted route of `--script FILE`. */
export function scriptedRoute(file: string, model: string | undefined, play: ScriptPlay = {}): ModelRoute {
  const { path, steps } = loadScript(file)
  const adapter = scriptedAdapter({ script: play.script !== undefined ? play.script(steps) : steps, ...(play.recordRequests !== undefined ? { recordRequests: play.recordRequests } : {}) })
  return { provider: SCRIPTED_PROVIDER, model: model ?? 'scripted', adapter, scriptFile: path }
}

/** The flags that pick a route: `--provider`, `--model`, `--script` (the same on every entry point). */
export interface RouteFlags {
  readonly provider?: string
  readonly model?: string
  readonly script?: string
}

/** The route a session last ran with: provider and model from its request header, base URL from `cli/route`. */
export interface StoredRoute {
  readonly provider: string
  readonly model: string
  readonly baseURL?: string
}

/** Event type the CLI logs (ignorable) to remember a session's endpoint, which the request header does not hold. */
export const CLI_ROUTE_EVENT = 'cli/route'

/** What else a route may depend on besides the flags and the config. */
export interface RouteContext {
  /** The resumed session's id and stored route, which a real route falls back on. */
  readonly resume?: string
  readonly previous?: StoredRoute
  /** Where API keys are read (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv
  /** How `--script` plays (default: once through one session). */
  readonly scriptPlay?: ScriptPlay
}

/**
 * @throws UsageError when `--script` and `--provider` are both given: the script replaces the model. Entry
 * points call it before they open anything, so the mistake leaves nothing behind.
 */
export function checkRouteFlags(flags: RouteFlags): void {
  if (flags.script !== undefined && flags.provider !== undefined) throw new UsageError('--script replaces the model: it cannot be combined with --provider')
}

/**
 * The model route of every entry point (run, chat, serve, worker): `--script FILE` a scripted model, else a
 * real provider's ({@link realRoute}).
 * @throws UsageError as {@link loadScript} and {@link realRoute} do
 */
export function modelRoute(config: EffectiveConfig, flags: RouteFlags, context: RouteContext = {}): ModelRoute {
  if (flags.script !== undefined) return scriptedRoute(flags.script, flags.model, context.scriptPlay)
  return realRoute(config, flags, context.previous, context.env ?? process.env, context.resume)
}

/** The route a session last ran with, from its log: the request header's provider and model, the last `cli/route` base URL. */
export function storedRoute(events: readonly SessionEvent[]): StoredRoute | undefined {
  const config = foldRequestHeader(events)?.config
  let baseURL: string | undefined
  for (const event of events) {
    if (event.type === CLI_ROUTE_EVENT) baseURL = (event.data as { baseURL?: string }).baseURL
  }
  if (config === undefined) return undefined
  return { provider: config.provider, model: config.model, ...(baseURL !== undefined ? { baseURL } : {}) }
}

/**
 * The route of a real provider: flags, else the session's stored route, else the configuration.
 * @throws UsageError when the provider is unknown, its key is not set, no model is known, or the resumed
 * session ran with a scripted model
 */
export function realRoute(config: EffectiveConfig, flags: Omit<RouteFlags, 'script'>, previous: StoredRoute | undefined, env: NodeJS.ProcessEnv, resume: string | undefined): ModelRoute {
  const provider = flags.provider ?? previous?.provider ?? config.provider
  if (provider === SCRIPTED_PROVIDER) {
    throw new UsageError(`session '${String(resume)}' was run with a scripted model; pass --script FILE to continue it`)
  }
  const spec = providerSpec(config, provider)
  requireApiKey(provider, spec, env)
  const model = flags.model ?? (previous?.provider === provider ? previous.model : provider === config.provider ? config.model : spec.defaultModel)
  if (model === undefined) throw new UsageError(`no model for provider '${provider}': pass --model NAME (or set "model" in ${config.configFile})`)
  const flagOrEnvBase = config.sources.baseURL === 'flag' || config.sources.baseURL === 'env' ? config.baseURL : undefined
  const baseURL = flagOrEnvBase ?? (previous?.provider === provider ? previous.baseURL : undefined) ?? (provider === config.provider ? config.baseURL : undefined)
  const adapter = providerAdapter(provider, spec, baseURL, env, { idleTimeoutMs: config.idleTimeoutMs, responseTimeoutMs: config.responseTimeoutMs, headers: config.headers })
  return { provider, model, adapter, ...(baseURL !== undefined ? { baseURL } : {}) }
}
