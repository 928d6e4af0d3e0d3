import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { HarnessError } from '../../errors/harness-error.js'
import { foldRequestHeader } from '../../session/request-header.js'
import { CliError, EXIT } from '../cli-error.js'
import { cliStore } from '../cli-harness.js'
import { resolveConfig, type EffectiveConfig } from '../config.js'
import { providerAdapter, providerSpec, requireApiKey, SCRIPTED_PROVIDER, scriptedRoute, type ModelRoute } from '../providers.js'

/** Options shared by `run` and `chat`. */
export interface AgentFlags {
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly session?: string
  readonly script?: string
  readonly root?: string
  readonly yes?: boolean
  readonly maxSteps?: number
  readonly json?: boolean
  /** `--store URL` (PostgreSQL only on this branch; issue 11 generalises it to every command). */
  readonly store?: string
  /** Send through the store's inbox and follow the session while a worker runs it. */
  readonly attach?: boolean
}

/** Everything `run`/`chat` decided before a session is touched. */
export interface PreparedRun {
  readonly config: EffectiveConfig
  readonly route: ModelRoute
  readonly root: string
  /** True when the root is a fresh scratch folder made for a scripted demo. */
  readonly scratchRoot: boolean
  /** The session to resume, when `--session` was given. */
  readonly resume?: string
}

/** Adds the options of `run` and `chat` to a command. */
export function addAgentOptions(command: Command): Command {
  return command
    .option('--provider <name>', 'deepseek (default), anthropic, openai, or a provider from the config file')
    .option('--model <name>', 'model name (default: the provider\'s)')
    .option('--base-url <url>', 'endpoint base URL (a local server, a proxy, another endpoint of the provider)')
    .option('--session <id>', 'continue this stored session')
    .option('--script <file>', 'use a scripted model from a JSON array of script steps (offline demo, no key)')
    .option('--root <dir>', 'folder the tools work in (default: the current folder)')
    .option('--yes', 'approve every permission question')
    .option('--max-steps <n>', 'most model steps per turn (turn budget)', positiveInteger)
    .option('--json', 'write the session events as JSONL to stdout instead of a transcript')
    .option('--store <url>', 'the session store (with --attach: postgres://user@host:port/db)')
    .option('--attach', 'send the input through the store\'s inbox and follow the session while a worker runs it')
}

/** commander argument parser for positive integers (a bad value is a usage error). */
export function positiveInteger(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer')
  return n
}

/** commander argument parser for seqs and other counts from 0. */
export function nonNegativeInteger(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a non-negative integer')
  return n
}

/**
 * Resolves config, route, root and key before any session exists: a missing key or bad option fails here,
 * leaving nothing behind.
 */
export async function prepareRun(flags: AgentFlags, env: NodeJS.ProcessEnv = process.env): Promise<PreparedRun> {
  const config = resolveConfig(
    {
      ...(flags.provider !== undefined ? { provider: flags.provider } : {}),
      ...(flags.model !== undefined ? { model: flags.model } : {}),
      ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl } : {}),
      ...(flags.root !== undefined ? { root: flags.root } : {}),
      ...(flags.maxSteps !== undefined ? { maxSteps: flags.maxSteps } : {}),
    },
    env,
  )
  if (flags.script !== undefined && flags.provider !== undefined) throw new CliError('--script replaces the model: it cannot be combined with --provider', EXIT.usage)
  let previous: { provider: string; model: string } | undefined
  let storedRoot: string | undefined
  if (flags.session !== undefined) {
    const stored = await readStored(config, flags.session)
    previous = foldRequestHeader(stored.events)?.config
    storedRoot = stored.header.cwd
  }
  const route = flags.script !== undefined ? scriptedRoute(flags.script, flags.model) : realRoute(config, flags, previous, env)
  let root = flags.root !== undefined || config.sources.root !== 'default' ? config.root : (storedRoot ?? config.root)
  let scratchRoot = false
  if (route.scriptFile !== undefined && flags.session === undefined && flags.root === undefined && config.sources.root === 'default') {
    // A demo must not write into wherever the user happens to stand.
    root = mkdtempSync(join(tmpdir(), 'ledgerloop-demo-'))
    scratchRoot = true
  }
  return { config, route, root, scratchRoot, ...(flags.session !== undefined ? { resume: flags.session } : {}) }
}

function realRoute(config: EffectiveConfig, flags: AgentFlags, previous: { provider: string; model: string } | undefined, env: NodeJS.ProcessEnv): ModelRoute {
  const provider = flags.provider ?? previous?.provider ?? config.provider
  if (provider === SCRIPTED_PROVIDER) {
    throw new CliError(`session '${String(flags.session)}' was run with a scripted model; pass --script FILE to continue it`, EXIT.usage)
  }
  const spec = providerSpec(config, provider)
  requireApiKey(provider, spec, env)
  const model = flags.model ?? (previous?.provider === provider ? previous.model : provider === config.provider ? config.model : spec.defaultModel)
  if (model === undefined) throw new CliError(`no model for provider '${provider}': pass --model NAME (or set "model" in ${config.configFile})`, EXIT.usage)
  const baseURL = flags.baseUrl ?? (provider === config.provider ? config.baseURL : undefined)
  return { provider, model, adapter: providerAdapter(provider, spec, baseURL, env) }
}

async function readStored(config: EffectiveConfig, id: string) {
  const store = cliStore(config)
  try {
    return await store.read(id)
  } catch (error) {
    if (error instanceof HarnessError && (error.code === 'SESSION_NOT_FOUND' || error.code === 'INVALID_SESSION_ID')) throw new CliError(error.message, EXIT.usage)
    throw error
  } finally {
    await store.close()
  }
}
