import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { anthropicAdapter } from '../llm/adapters/anthropic.js'
import { deepseekAdapter } from '../llm/adapters/deepseek.js'
import { openaiCompatibleAdapter } from '../llm/adapters/openai-compatible.js'
import { scriptedAdapter, type ScriptStep } from '../llm/adapters/scripted.js'
import type { LlmAdapter } from '../llm/types.js'
import { UsageError } from './usage-error.js'
import type { EffectiveConfig, ProviderSpec } from './config.js'

/** The provider route of `--script` runs. */
export const SCRIPTED_PROVIDER = 'scripted'

/** A demo command line shown whenever the user needs a way to try ledgerloop without a key. */
export const DEMO_HINT = 'ledgerloop run --script examples/scripts/demo.json "Take notes"'

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

/** The scripted route of `--script FILE`. */
export function scriptedRoute(file: string, model: string | undefined): ModelRoute {
  const { path, steps } = loadScript(file)
  return { provider: SCRIPTED_PROVIDER, model: model ?? 'scripted', adapter: scriptedAdapter({ script: steps }), scriptFile: path }
}
