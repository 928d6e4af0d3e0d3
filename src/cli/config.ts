import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import type { ModelInfo } from '../llm/types.js'
import type { PermissionRules } from '../plugins/permission.js'
import { CliError, EXIT } from './cli-error.js'
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
  readonly maxSteps: number
  readonly maxTokens: number | undefined
  /** Retry plugin settings for failed model requests (attempts include the first). */
  readonly retry: { readonly maxAttempts?: number; readonly baseDelayMs?: number; readonly maxDelayMs?: number }
  /** MCP servers whose tools the agent gets (the config file's `mcpServers`). */
  readonly mcpServers: Readonly<Record<string, McpServerEntry>>
  readonly sources: Readonly<Record<'provider' | 'model' | 'baseURL' | 'root' | 'shell' | 'maxSteps' | 'maxTokens', SettingSource>>
}

/** Options given on the command line that override the configuration. */
export interface ConfigFlags {
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly root?: string
  readonly maxSteps?: number
}

/** Steps per turn when nothing else says (a runaway loop stops here, with a message naming the budget). */
export const DEFAULT_MAX_STEPS = 50

const BUILTIN_PROVIDERS: Readonly<Record<string, ProviderSpec>> = Object.freeze({
  deepseek: { type: 'deepseek', apiKeyEnv: 'DEEPSEEK_API_KEY', keyRequired: true, defaultModel: 'deepseek-flash' },
  anthropic: { type: 'anthropic', apiKeyEnv: 'ANTHROPIC_API_KEY', keyRequired: true, defaultModel: 'claude-sonnet-4-5' },
  // Optional key: the same route serves local OpenAI-compatible servers (vLLM, Ollama, llama.cpp).
  openai: { type: 'openai', baseURL: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY', keyRequired: false },
})

// Where a family's adapter looks for its key when a config provider names no variable.
const FAMILY_KEY_ENV: Readonly<Record<ProviderType, string | undefined>> = { deepseek: 'DEEPSEEK_API_KEY', anthropic: 'ANTHROPIC_API_KEY', openai: undefined }

const modelInfo = z.strictObject({
  contextWindow: z.number().int().positive().optional(),
  defaultMaxTokens: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  reasoningEfforts: z.array(z.string()).optional(),
  defaultReasoningEffort: z.string().optional(),
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
  maxSteps: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  retry: z
    .strictObject({
      maxAttempts: z.number().int().positive().optional(),
      baseDelayMs: z.number().int().nonnegative().optional(),
      maxDelayMs: z.number().int().nonnegative().optional(),
    })
    .optional(),
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
    throw new CliError(`cannot read config file ${path}: ${(error as Error).message}`, EXIT.usage)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new CliError(`config file ${path} is not valid JSON: ${(error as Error).message}`, EXIT.usage)
  }
  const parsed = configFileSchema.safeParse(value)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : []
      const path = [...issue.path.map(String), ...(keys.length === 1 ? keys : [])].join('.')
      const what = issue.code === 'unrecognized_keys' ? `unknown field${keys.length > 1 ? `s ${keys.join(', ')}` : ''}` : issue.message
      return `  field "${path === '' ? '(top level)' : path}": ${what}`
    })
    throw new CliError(`invalid config file ${path}:\n${lines.join('\n')}`, EXIT.usage)
  }
  return parsed.data
}

/** Merges config file < environment < flags into the effective configuration. */
export function resolveConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): EffectiveConfig {
  const home = ledgerloopHome(env)
  const configFile = join(home, 'config.json')
  const file = readConfigFile(configFile)
  const providers: Record<string, ProviderSpec> = { ...BUILTIN_PROVIDERS }
  for (const [name, entry] of Object.entries(file.providers ?? {})) {
    if (name === 'scripted') throw new CliError(`invalid config file ${configFile}:\n  field "providers.scripted": the name 'scripted' is reserved for --script`, EXIT.usage)
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

  const [provider, providerSource] = pick(flags.provider, envText('LEDGERLOOP_PROVIDER'), file.provider, 'deepseek')
  // The file's model and base URL belong to the file's provider: they do not follow a provider switch.
  const fileOwnsRoute = (file.provider ?? 'deepseek') === provider
  const spec = providers[provider]
  const [model, modelSource] = pick<string | undefined>(flags.model, envText('LEDGERLOOP_MODEL'), fileOwnsRoute ? file.model : undefined, spec?.defaultModel)
  const [baseURL, baseSource] = pick<string | undefined>(flags.baseUrl, envText('LEDGERLOOP_BASE_URL'), fileOwnsRoute ? file.baseURL : undefined, undefined)
  const [rootSetting, rootSource] = pick<string | undefined>(flags.root, undefined, file.root, undefined)
  const [maxSteps, stepsSource] = pick(flags.maxSteps, undefined, file.maxSteps, DEFAULT_MAX_STEPS)
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
    maxSteps,
    maxTokens: file.maxTokens,
    retry: file.retry ?? {},
    mcpServers: file.mcpServers ?? {},
    sources: {
      provider: providerSource,
      model: modelSource,
      baseURL: baseSource,
      root: rootSource,
      shell: file.shell !== undefined ? 'config' : 'default',
      maxSteps: stepsSource,
      maxTokens: file.maxTokens !== undefined ? 'config' : 'default',
    },
  }
}
