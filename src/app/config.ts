import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import type { ModelInfo, ModelPricing } from '../llm/types.js'
import type { PermissionRules } from '../plugins/permission.js'
import { HarnessError } from '../errors/harness-error.js'
import { resolveShellEnvPolicy } from '../tools/builtin/shell-env.js'
import { UsageError } from './usage-error.js'
import { mcpServersSchema, type McpServerEntry } from './mcp-config.js'

/** The three adapter families a provider can be. */
export type ProviderType = 'deepseek' | 'anthropic' | 'openai'

/** One model route the CLI can talk to: a built-in one, or one named in the config file. */
export interface ProviderSpec {
  readonly type: ProviderType
  /** Endpoint base; absent = the adapter's default. */
  readonly baseURL?: string
  /** Environment variable holding the key (keys never live in the config file). */
  readonly apiKeyEnv?: string
  /** Whether a request cannot succeed without the key (checked before any session is created). */
  readonly keyRequired: boolean
  readonly models?: Readonly<Record<string, ModelInfo>>
  /** Model used when none is chosen. */
  readonly defaultModel?: string
}

/** Where an effective setting came from (shown by `ledgerloop config`). */
export type SettingSource = 'default' | 'config' | 'env' | 'flag'

/** The settings after merging config file < environment < flags. */
export interface EffectiveConfig {
  /** `$LEDGERLOOP_HOME` (default `~/.ledgerloop`). */
  readonly home: string
  readonly configFile: string
  readonly configFileExists: boolean
  readonly provider: string
  /** Undefined when neither the user nor the provider names one (a usage error when a model is needed). */
  readonly model: string | undefined
  readonly baseURL: string | undefined
  /** Built-in providers plus the config file's, by name. */
  readonly providers: Readonly<Record<string, ProviderSpec>>
  readonly permissions: PermissionRules
  /** Tool root, absolute. */
  readonly root: string
  /** Whether the `bash` tool is offered. */
  readonly shell: boolean
  /**
   * Environment variables `bash` gets besides the built-in allow-list: the config file's `bashEnv` and every
   * `--bash-env NAME` (see `DEFAULT_BASH_ENV`).
   */
  readonly bashEnv: readonly string[]
  readonly maxSteps: number
  readonly maxTokens: number | undefined
  /**
   * Spending cap in USD (`--max-cost`, or `maxCostUsd` in the config file): the cost budget stops a session
   * before the request that would follow reaching it. Undefined = no cap.
   */
  readonly maxCostUsd?: number
  /** Retry plugin settings for failed model requests (attempts include the first). */
  readonly retry: { readonly maxAttempts: number; readonly baseDelayMs?: number; readonly maxDelayMs: number }
  /** Longest silence of a model stream (SSE comments count as activity) before the attempt fails `TIMEOUT`. */
  readonly idleTimeoutMs: number
  /**
   * Longest wait for a server's response (HTTP status and headers) before the attempt fails `TIMEOUT`: a dead
   * endpoint fails on this, a slow model streaming behind a live one never does.
   */
  readonly responseTimeoutMs: number
  /** Where sessions live: a JSONL folder, `sqlite:PATH` or `postgres://…` (see store-spec.ts). */
  readonly store: string
  /** Reasoning effort sent with every request (`off`, `low`, `high`, `max`, …); undefined = the model's default. */
  readonly reasoningEffort: string | undefined
  /** Output token cap of each request; undefined = the model's default. */
  readonly maxOutputTokens: number | undefined
  /** Extra HTTP headers sent with every model request (never logged). */
  readonly headers: Readonly<Record<string, string>>
  /** Extra system prompt text (`--system`), appended to the CLI persona. */
  readonly system: string | undefined
  /** Whether `AGENTS.md` in the tool root is read into the system prompt. */
  readonly projectFile: boolean
  /** Price overrides by `model` or `provider/model`. */
  readonly pricing: Readonly<Record<string, ModelPricing>>
  /** Problems of a config file that a read-only command chose to ignore (see `lenient`). */
  readonly ignoredConfigProblem?: string
  /** MCP servers whose tools the agent gets (the config file's `mcpServers`). */
  readonly mcpServers: Readonly<Record<string, McpServerEntry>>
  readonly sources: Readonly<
    Record<
      'provider' | 'model' | 'baseURL' | 'root' | 'shell' | 'maxSteps' | 'maxTokens' | 'idleTimeoutMs' | 'responseTimeoutMs' | 'retry' | 'store' | 'reasoningEffort' | 'maxOutputTokens' | 'system',
      SettingSource
    >
  >
}

/** Options given on the command line that override the configuration. */
export interface ConfigFlags {
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly root?: string
  readonly maxSteps?: number
  /** `--max-cost USD`. */
  readonly maxCost?: number
  readonly store?: string
  /** Seconds. */
  readonly idleTimeout?: number
  /** `--response-timeout SECONDS`. */
  readonly responseTimeout?: number
  /** Retries after the first attempt. */
  readonly retries?: number
  readonly reasoningEffort?: string
  readonly maxOutputTokens?: number
  /** `Name: value` lines. */
  readonly header?: readonly string[]
  readonly system?: string
  /** False with `--no-project-file`. */
  readonly projectFile?: boolean
  /** `--bash-env NAME`, repeatable: added to the config file's `bashEnv`. */
  readonly bashEnv?: readonly string[]
}

/** Steps per turn when nothing else says (a runaway loop stops here, with a message naming the budget). */
export const DEFAULT_MAX_STEPS = 50

/**
 * Idle timeout for interactive use: DeepSeek sends `: keep-alive` comments while it queues a request, and those
 * count as activity, so 90 s of real silence means a stalled connection, not a busy model.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 90_000

/**
 * Wait for a server's response before an attempt counts as failed. Providers answer with their headers at once
 * and keep a queued request alive with comments, so ten seconds of no answer at all means a dead endpoint: with
 * the default retries it fails in well under a minute (see {@link deadEndpointMs}).
 */
export const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000

/** First retry wait when the config file sets none (the retry plugin's default; each later wait doubles). */
const DEFAULT_BASE_RETRY_DELAY_MS = 500

/** Attempts per request (the first and 3 retries): with the 10 s delay cap the waits add up to at most 30 s. */
export const DEFAULT_MAX_ATTEMPTS = 4

/** Cap of one retry wait (Retry-After included). */
export const DEFAULT_MAX_RETRY_DELAY_MS = 10_000

/**
 * The longest a request can hold the CLI when the server stalls every time: each attempt runs into the idle
 * timeout, and every retry waits at most the delay cap.
 */
export function worstCaseRequestMs(config: Pick<EffectiveConfig, 'idleTimeoutMs' | 'retry'>): number {
  return config.retry.maxAttempts * config.idleTimeoutMs + (config.retry.maxAttempts - 1) * config.retry.maxDelayMs
}

/**
 * The longest a request takes to fail against an endpoint that accepts the connection and never answers: every
 * attempt runs into the response timeout, and the retry waits double from the base delay up to the cap (jitter
 * only shortens them).
 */
export function deadEndpointMs(config: Pick<EffectiveConfig, 'idleTimeoutMs' | 'responseTimeoutMs' | 'retry'>): number {
  const base = config.retry.baseDelayMs ?? DEFAULT_BASE_RETRY_DELAY_MS
  let waits = 0
  for (let retry = 0; retry < config.retry.maxAttempts - 1; retry++) waits += Math.min(config.retry.maxDelayMs, base * 2 ** retry)
  return config.retry.maxAttempts * Math.min(config.responseTimeoutMs, config.idleTimeoutMs) + waits
}

const BUILTIN_PROVIDERS: Readonly<Record<string, ProviderSpec>> = Object.freeze({
  deepseek: { type: 'deepseek', apiKeyEnv: 'DEEPSEEK_API_KEY', keyRequired: true, defaultModel: 'deepseek-flash' },
  anthropic: { type: 'anthropic', apiKeyEnv: 'ANTHROPIC_API_KEY', keyRequired: true, defaultModel: 'claude-sonnet-4-5' },
  // Optional key: the same route serves local OpenAI-compatible servers (vLLM, Ollama, llama.cpp).
  openai: { type: 'openai', baseURL: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY', keyRequired: false },
})

// Where a family's adapter looks for its key when a config provider names no variable.
const FAMILY_KEY_ENV: Readonly<Record<ProviderType, string | undefined>> = { deepseek: 'DEEPSEEK_API_KEY', anthropic: 'ANTHROPIC_API_KEY', openai: undefined }

const pricingSchema = z.strictObject({
  currency: z.enum(['USD', 'CNY']),
  inputPerMTok: z.number().nonnegative(),
  cachedInputPerMTok: z.number().nonnegative().optional(),
  outputPerMTok: z.number().nonnegative(),
  asOf: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD'),
  offPeak: z
    .strictObject({
      share: z.number().min(0).max(1),
      peakHoursUtc: z.array(z.string().regex(/^\d{2}:\d{2}-\d{2}:\d{2}$/, 'HH:MM-HH:MM')),
      peakWeekdaysUtc: z.array(z.number().int().min(0).max(6)).optional(),
    })
    .optional(),
})

const modelInfo = z.strictObject({
  contextWindow: z.number().int().positive().optional(),
  defaultMaxTokens: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  reasoningEfforts: z.array(z.string()).optional(),
  defaultReasoningEffort: z.string().optional(),
  pricing: pricingSchema.optional(),
})

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name (keys are read from the environment, never from this file)')

const providerEntry = z.strictObject({
  type: z.enum(['openai', 'anthropic', 'deepseek']),
  baseURL: z.url().optional(),
  apiKeyEnv: envName.optional(),
  models: z.record(z.string().min(1), modelInfo).optional(),
  model: z.string().min(1).optional(),
})

const rules = z.array(z.string().min(1))

/** The config file's shape (`$LEDGERLOOP_HOME/config.json`); every field optional. */
const configFileSchema = z.strictObject({
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  baseURL: z.url().optional(),
  providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'provider names are lower-case letters, digits, - and _'), providerEntry).optional(),
  permissions: z.strictObject({ allow: rules.optional(), ask: rules.optional(), deny: rules.optional() }).optional(),
  root: z.string().min(1).optional(),
  shell: z.boolean().optional(),
  bashEnv: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*\*?$/, 'an environment variable name, or a prefix ending in *')).optional(),
  maxSteps: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  retry: z
    .strictObject({
      maxAttempts: z.number().int().positive().optional(),
      baseDelayMs: z.number().int().nonnegative().optional(),
      maxDelayMs: z.number().int().nonnegative().optional(),
    })
    .optional(),
  idleTimeoutMs: z.number().int().positive().optional(),
  responseTimeoutMs: z.number().int().positive().optional(),
  store: z.string().min(1).optional(),
  reasoningEffort: z.string().min(1).optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  headers: z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'an HTTP header name'), z.string()).optional(),
  system: z.string().optional(),
  projectFile: z.boolean().optional(),
  pricing: z.record(z.string().min(1), pricingSchema).optional(),
  mcpServers: mcpServersSchema.optional(),
})

type ConfigFile = z.infer<typeof configFileSchema>

/** `$LEDGERLOOP_HOME`, defaulting to `~/.ledgerloop`. */
export function ledgerloopHome(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.LEDGERLOOP_HOME
  return home !== undefined && home !== '' ? resolve(home) : join(homedir(), '.ledgerloop')
}

/**
 * Reads and validates the config file. A missing file is an empty config; an unreadable, non-JSON or invalid
 * one is a usage error naming the file and the offending field.
 */
export function readConfigFile(path: string): ConfigFile {
  if (!existsSync(path)) return {}
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new UsageError(`cannot read config file ${path}: ${(error as Error).message}`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new UsageError(`config file ${path} is not valid JSON: ${(error as Error).message}`)
  }
  const parsed = configFileSchema.safeParse(value)
  if (!parsed.success) {
    const line = (path: readonly PropertyKey[], what: string): string => `  field "${path.length === 0 ? '(top level)' : path.map(String).join('.')}": ${what}`
    // One line per unknown field, each with its nearest known name when it looks like a typo of one.
    const lines = parsed.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys' ? issue.keys.map((key) => line([...issue.path, key], `unknown field${suggestKey(key, knownKeysAt(issue.path))}`)) : [line(issue.path, issue.message)],
    )
    throw new UsageError(`invalid config file ${path}:\n${lines.join('\n')}`)
  }
  return parsed.data
}

/** The field names the config file's schema allows at `path` (empty where it allows any, as in `providers`). */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType = configFileSchema
  for (const step of path) {
    schema = unwrapOptional(schema)
    if (schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.ZodType>)[String(step)] ?? z.never()
    else if (schema instanceof z.ZodRecord) schema = schema.valueType as z.ZodType
    else if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType
    else return []
  }
  schema = unwrapOptional(schema)
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : []
}

function unwrapOptional(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodOptional ? (schema.unwrap() as z.ZodType) : schema
}

/** ` (did you mean "model"?)` for a key that is a typo of a known one, as commander does for flags. */
function suggestKey(key: string, known: readonly string[]): string {
  const best = closestKey(key, known)
  return best !== undefined ? ` (did you mean "${best}"?)` : ''
}

/** The known key nearest to `key` by edit distance (a swap counts once), when it is near enough to be a typo. */
function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  // Within a third of the name (at least one edit): `modle` → `model`, but `colour` suggests nothing.
  return best !== undefined && bestDistance <= Math.max(1, Math.floor(key.length / 3)) ? best : undefined
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = rows[i] as number[]
      const above = rows[i - 1] as number[]
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let value = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, ((rows[i - 2] as number[])[j - 2] as number) + 1)
      row[j] = value
    }
  }
  return (rows[a.length] as number[])[b.length] as number
}

/** How {@link resolveConfig} treats a broken config file. */
export interface ResolveOptions {
  /**
   * Read-only commands (`sessions`, `inspect`, `verify`, …) set this: a broken config file is reported once on
   * stderr and ignored, instead of locking the user out of the logs they want to look at.
   */
  readonly lenient?: boolean
}

/** Merges config file < environment < flags into the effective configuration. */
export function resolveConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd(), options: ResolveOptions = {}): EffectiveConfig {
  const home = ledgerloopHome(env)
  const configFile = join(home, 'config.json')
  let file: ConfigFile
  let ignoredConfigProblem: string | undefined
  try {
    file = readConfigFile(configFile)
  } catch (error) {
    if (options.lenient !== true || !(error instanceof UsageError)) throw error
    file = {}
    ignoredConfigProblem = error.message
  }
  const providers: Record<string, ProviderSpec> = { ...BUILTIN_PROVIDERS }
  for (const [name, entry] of Object.entries(file.providers ?? {})) {
    if (name === 'scripted') throw new UsageError(`invalid config file ${configFile}:\n  field "providers.scripted": the name 'scripted' is reserved for --script`)
    const builtin = BUILTIN_PROVIDERS[name]
    const apiKeyEnv = entry.apiKeyEnv ?? builtin?.apiKeyEnv ?? FAMILY_KEY_ENV[entry.type]
    const defaultModel = entry.model ?? Object.keys(entry.models ?? {})[0] ?? builtin?.defaultModel
    providers[name] = {
      type: entry.type,
      ...(entry.baseURL !== undefined ? { baseURL: entry.baseURL } : builtin?.baseURL !== undefined ? { baseURL: builtin.baseURL } : {}),
      ...(apiKeyEnv !== undefined ? { apiKeyEnv } : {}),
      // Named explicitly or by a key-only family: the user says a key is needed.
      keyRequired: entry.type !== 'openai' || entry.apiKeyEnv !== undefined,
      ...(entry.models !== undefined ? { models: entry.models as Record<string, ModelInfo> } : {}),
      ...(defaultModel !== undefined ? { defaultModel } : {}),
    }
  }
  const pick = <T>(flag: T | undefined, envValue: T | undefined, fileValue: T | undefined, fallback: T): [T, SettingSource] =>
    flag !== undefined ? [flag, 'flag'] : envValue !== undefined ? [envValue, 'env'] : fileValue !== undefined ? [fileValue, 'config'] : [fallback, 'default']
  const envText = (name: string): string | undefined => (env[name] !== undefined && env[name] !== '' ? env[name] : undefined)
  const envSeconds = (name: string): number | undefined => {
    const text = envText(name)
    if (text === undefined) return undefined
    const n = Number(text)
    if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name}=${text} is not a positive number of seconds`)
    return n
  }
  const envCount = (name: string): number | undefined => {
    const text = envText(name)
    if (text === undefined) return undefined
    if (!/^\d+$/.test(text)) throw new UsageError(`${name}=${text} is not a whole number`)
    return Number(text)
  }

  const [provider, providerSource] = pick(flags.provider, envText('LEDGERLOOP_PROVIDER'), file.provider, 'deepseek')
  if (providers[provider] === undefined && provider !== 'scripted' && options.lenient !== true) {
    const from = providerSource === 'flag' ? '--provider' : providerSource === 'env' ? 'LEDGERLOOP_PROVIDER' : `"provider" in ${configFile}`
    throw new UsageError(`unknown provider '${provider}' (from ${from}); known: ${Object.keys(providers).join(', ')} (add others under "providers" in ${configFile})`)
  }
  // The file's model and base URL belong to the file's provider: they do not follow a provider switch.
  const fileOwnsRoute = (file.provider ?? 'deepseek') === provider
  const spec = providers[provider]
  const [model, modelSource] = pick<string | undefined>(flags.model, envText('LEDGERLOOP_MODEL'), fileOwnsRoute ? file.model : undefined, spec?.defaultModel)
  const [baseURL, baseSource] = pick<string | undefined>(flags.baseUrl, envText('LEDGERLOOP_BASE_URL'), fileOwnsRoute ? file.baseURL : undefined, undefined)
  if (baseURL !== undefined && (baseSource === 'flag' || baseSource === 'env')) checkBaseUrl(baseURL, baseSource === 'flag' ? '--base-url' : 'LEDGERLOOP_BASE_URL')
  const [rootSetting, rootSource] = pick<string | undefined>(flags.root, undefined, file.root, undefined)
  const [maxSteps, stepsSource] = pick(flags.maxSteps, undefined, file.maxSteps, DEFAULT_MAX_STEPS)
  const maxCostUsd = flags.maxCost ?? file.maxCostUsd
  const envIdle = envSeconds('LEDGERLOOP_IDLE_TIMEOUT')
  const [idleTimeoutMs, idleSource] = pick(
    flags.idleTimeout !== undefined ? Math.round(flags.idleTimeout * 1000) : undefined,
    envIdle !== undefined ? Math.round(envIdle * 1000) : undefined,
    file.idleTimeoutMs,
    DEFAULT_IDLE_TIMEOUT_MS,
  )
  const envResponse = envSeconds('LEDGERLOOP_RESPONSE_TIMEOUT')
  const [responseTimeoutMs, responseSource] = pick(
    flags.responseTimeout !== undefined ? Math.round(flags.responseTimeout * 1000) : undefined,
    envResponse !== undefined ? Math.round(envResponse * 1000) : undefined,
    file.responseTimeoutMs,
    DEFAULT_RESPONSE_TIMEOUT_MS,
  )
  const envRetries = envCount('LEDGERLOOP_RETRIES')
  const [maxAttempts, retrySource] = pick(
    flags.retries !== undefined ? flags.retries + 1 : undefined,
    envRetries !== undefined ? envRetries + 1 : undefined,
    file.retry?.maxAttempts,
    DEFAULT_MAX_ATTEMPTS,
  )
  const [store, storeSource] = pick(flags.store, envText('LEDGERLOOP_STORE'), file.store, join(home, 'sessions'))
  const [reasoningEffort, effortSource] = pick<string | undefined>(flags.reasoningEffort, envText('LEDGERLOOP_REASONING_EFFORT'), file.reasoningEffort, undefined)
  const [maxOutputTokens, outputSource] = pick<number | undefined>(flags.maxOutputTokens, undefined, file.maxOutputTokens, undefined)
  const [system, systemSource] = pick<string | undefined>(flags.system, undefined, file.system, undefined)
  const headers: Record<string, string> = { ...file.headers }
  for (const line of flags.header ?? []) {
    const colon = line.indexOf(':')
    const name = colon < 0 ? '' : line.slice(0, colon).trim()
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name)) throw new UsageError(`--header '${line.split(':')[0] ?? ''}…' is not 'Name: value'`)
    headers[name] = line.slice(colon + 1).trim()
  }
  const bashEnv = [...new Set([...(file.bashEnv ?? []), ...(flags.bashEnv ?? [])])]
  if (options.lenient !== true) {
    try {
      resolveShellEnvPolicy(bashEnv, providerKeyNames(providers))
    } catch (error) {
      if (!(error instanceof HarnessError)) throw error
      throw new UsageError(`${error.message} (from --bash-env or "bashEnv" in ${configFile})`)
    }
  }
  return {
    home,
    configFile,
    configFileExists: existsSync(configFile),
    provider,
    model,
    baseURL,
    providers,
    permissions: file.permissions ?? {},
    // Relative roots, from the file or a flag, are relative to where the command runs.
    root: rootSetting === undefined ? cwd : resolve(cwd, rootSetting),
    shell: file.shell ?? true,
    bashEnv,
    maxSteps,
    maxTokens: file.maxTokens,
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    retry: {
      maxAttempts,
      ...(file.retry?.baseDelayMs !== undefined ? { baseDelayMs: file.retry.baseDelayMs } : {}),
      maxDelayMs: file.retry?.maxDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS,
    },
    idleTimeoutMs,
    responseTimeoutMs,
    store: storeSource === 'flag' || storeSource === 'env' ? store : storeSource === 'config' && !/^[a-z]+:/.test(store) ? resolve(home, store) : store,
    reasoningEffort,
    maxOutputTokens,
    headers,
    system,
    projectFile: flags.projectFile ?? file.projectFile ?? true,
    pricing: file.pricing ?? {},
    ...(ignoredConfigProblem !== undefined ? { ignoredConfigProblem } : {}),
    mcpServers: file.mcpServers ?? {},
    sources: {
      provider: providerSource,
      model: modelSource,
      baseURL: baseSource,
      root: rootSource,
      shell: file.shell !== undefined ? 'config' : 'default',
      maxSteps: stepsSource,
      maxTokens: file.maxTokens !== undefined ? 'config' : 'default',
      idleTimeoutMs: idleSource,
      responseTimeoutMs: responseSource,
      retry: retrySource,
      store: storeSource,
      reasoningEffort: effortSource,
      maxOutputTokens: outputSource,
      system: systemSource,
    },
  }
}

/** The variables holding the configured providers' keys, built-in and the config file's. */
function providerKeyNames(providers: Readonly<Record<string, ProviderSpec>>): string[] {
  return [...new Set(Object.values(providers).flatMap((spec) => (spec.apiKeyEnv !== undefined ? [spec.apiKeyEnv] : [])))]
}

/**
 * What `builtinTools` needs for the environment of `bash`: the user's additions, and every configured
 * provider's key variable as a secret, so a key kept under a name of the user's own (`"apiKeyEnv": "WORK_LLM"`)
 * never reaches a command, not even copied into an allowed variable.
 */
export function bashEnvOptions(config: Pick<EffectiveConfig, 'bashEnv' | 'providers'>): { bashEnv: readonly string[]; secretEnv: readonly string[] } {
  return { bashEnv: config.bashEnv, secretEnv: providerKeyNames(config.providers) }
}

/** A base URL from a flag or the environment, checked like the config file's (a usage error, never a retry). */
export function checkBaseUrl(value: string, from: string): void {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new UsageError(`${from} '${value}' is not a URL (expected something like https://api.deepseek.com or http://127.0.0.1:8000/v1)`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${from} '${value}' must be an http:// or https:// URL`)
  }
}
