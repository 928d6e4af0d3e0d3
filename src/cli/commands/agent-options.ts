import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { closerEvents } from '../../session/repair.js'
import type { SessionStore } from '../../store/types.js'
import { CliError, EXIT } from '../cli-error.js'
import { cliStore, storeSpecOf } from '../cli-harness.js'
import { resolveConfig, type ConfigFlags, type EffectiveConfig } from '../../app/config.js'
import { projectInstructions, type ProjectInstructions } from '../../app/project-instructions.js'
import { parseSandboxMode, type SandboxMode } from '../../tools/builtin/sandbox.js'
import type { NetworkPolicy } from '../../tools/builtin/bash.js'
import { checkRouteFlags, modelRoute, storedRoute, type ModelRoute, type StoredRoute } from '../../app/providers.js'
import { mostRecentSession, resolveSessionRef } from '../session-ref.js'
import { refuseLiveSession } from '../../app/store-spec.js'

/** Options shared by `run` and `chat`. */
export interface AgentFlags {
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly session?: string
  readonly continue?: boolean
  readonly script?: string
  readonly root?: string
  readonly yes?: boolean
  readonly maxSteps?: number
  /** `--max-cost USD`: the session's spending cap. */
  readonly maxCost?: number
  readonly json?: boolean
  readonly print?: boolean
  /** `--raw`: the model's text as it streams, markdown not rendered. */
  readonly raw?: boolean
  /** `run --output-schema FILE`: a JSON Schema file the turn's final answer must be valid under. */
  readonly outputSchema?: string
  readonly verbose?: boolean
  readonly store?: string
  readonly system?: string
  readonly projectFile?: boolean
  readonly reasoningEffort?: string
  readonly maxOutputTokens?: number
  readonly idleTimeout?: number
  readonly responseTimeout?: number
  readonly retries?: number
  readonly header?: string[]
  readonly otlp?: string
  readonly sandbox?: SandboxMode
  readonly network?: boolean
  readonly networkAsk?: boolean
  /** `--bash-env NAME` (repeatable): more environment variables for `bash`. */
  readonly bashEnv?: string[]
  /** Send through the store's inbox and follow the session while a worker runs it (`postgres://` stores). */
  readonly attach?: boolean
  /** `--force`: resume a quarantined session anyway (the quarantine is lifted, durably). */
  readonly force?: boolean
  /** `--shutdown-grace-ms N`: how long a SIGTERM lets running turns finish before they are cut off. */
  readonly shutdownGraceMs?: number
}

/** Everything `run`/`chat` decided before a session is touched. */
export interface PreparedRun {
  readonly config: EffectiveConfig
  readonly route: ModelRoute
  readonly root: string
  /** True when the root is a fresh scratch folder made for a scripted demo. */
  readonly scratchRoot: boolean
  /** The full id of the session to resume (`--session` prefix or `--continue`). */
  readonly resume?: string
  /** The opened store (the caller closes it through the harness). */
  readonly store: SessionStore
  /** `--system` and `AGENTS.md`. */
  readonly instructions: ProjectInstructions
  /** What resuming will repair, one line each (a torn tail cut off); the interrupted turn is {@link interrupted}. */
  readonly repairs: readonly string[]
  /** The turn a crash left open that resuming closes, and how many of its calls repair answers "outcome unknown". */
  readonly interrupted?: { readonly turn: number; readonly unknownCalls: number }
  /** `--force`: resume even a quarantined session. */
  readonly force?: boolean
  /** `--shutdown-grace-ms`: what a SIGTERM leaves a running turn. */
  readonly shutdownGraceMs?: number
  /** The base URL the route talks to, when it is not the provider's default (remembered for resumes). */
  readonly baseURL?: string
  /** Where `bash` runs (`--sandbox`, default bwrap) and when it keeps the network (`--network`: always; `--network-ask`: per call). */
  readonly sandbox: SandboxMode
  readonly network: NetworkPolicy
}

/** Adds `--store` (every command has it). */
export function addStoreOption(command: Command): Command {
  return command.option('--store <url|dir>', 'where sessions live: a folder of JSONL files, sqlite:PATH or postgres://… (default $LEDGERLOOP_HOME/sessions)')
}

/** The options of an agent, each declared once: `run`, `chat` and `serve` take them all, `worker` the ones it honours. */
const AGENT_OPTIONS = {
  provider: (c: Command) => c.option('--provider <name>', 'deepseek (default), anthropic, openai, or a provider from the config file'),
  model: (c: Command) => c.option('--model <name>', "model name (default: the provider's)"),
  baseUrl: (c: Command) => c.option('--base-url <url>', 'endpoint base URL (a local server, a proxy, another endpoint of the provider)'),
  session: (c: Command) => c.option('--session <id>', 'continue this stored session (a unique prefix of its id is enough)'),
  continue: (c: Command) => c.option('-c, --continue', 'continue the most recent session'),
  script: (c: Command) => c.option('--script <file>', 'use a scripted model from a JSON array of script steps (offline demo, no key)'),
  root: (c: Command) => c.option('--root <dir>', 'folder the tools work in (default: the current folder)'),
  yes: (c: Command) => c.option('--yes', 'approve every permission question'),
  maxSteps: (c: Command) => c.option('--max-steps <n>', 'most model steps per turn (turn budget)', positiveInteger),
  maxCost: (c: Command) => c.option('--max-cost <usd>', 'stop the session once it has spent this many US dollars (cost budget; failed attempts count)', usdAmount),
  system: (c: Command) => c.option('--system <text|@file>', 'extra system prompt text, or @FILE to read it from a file'),
  projectFile: (c: Command) => c.option('--no-project-file', 'do not read AGENTS.md from the tool root into the system prompt'),
  reasoningEffort: (c: Command) => c.option('--reasoning-effort <level>', 'reasoning effort of every request (deepseek: off, low, high, max)'),
  maxOutputTokens: (c: Command) => c.option('--max-output-tokens <n>', 'output token cap of each request', positiveInteger),
  idleTimeout: (c: Command) => c.option('--idle-timeout <seconds>', 'give up on a silent model stream after this long (default 90)', positiveNumber),
  responseTimeout: (c: Command) =>
    c.option('--response-timeout <seconds>', 'give up on an attempt whose server has not begun to answer after this long (default 10)', positiveNumber),
  retries: (c: Command) => c.option('--retries <n>', 'retries of a failed model request (default 3)', nonNegativeInteger),
  header: (c: Command) => c.option('--header <name:value>', 'extra HTTP header for model requests (repeatable)', collect),
  json: (c: Command) => c.option('--json', 'write the session events as JSONL to stdout instead of a transcript'),
  print: (c: Command) => c.option('--print', 'write only the final answer to stdout (no transcript)'),
  raw: (c: Command) => c.option('--raw', 'show answers as the model writes them, without rendering their markdown (rendered only on a colour terminal)'),
  verbose: (c: Command) => c.option('--verbose', 'off a terminal: a status line on stderr per request and retry'),
  otlp: (c: Command) => c.option('--otlp <url>', 'send OpenTelemetry spans of every turn to this OTLP/HTTP endpoint (default: $OTEL_EXPORTER_OTLP_ENDPOINT)'),
  sandbox: (c: Command) => c.option('--sandbox <mode>', 'where bash runs: bwrap (default; fails closed without bubblewrap) or off (on the host, with your rights)', sandboxMode),
  network: (c: Command) => c.option('--network', 'let sandboxed bash commands use the network'),
  networkAsk: (c: Command) => c.option('--network-ask', "let a bash call ask for the network; the permission rules for 'network' decide (default: you are asked)"),
  bashEnv: (c: Command) => c.option('--bash-env <name>', 'pass this environment variable to bash too (repeatable; PREFIX_* for a prefix); provider keys are refused', collect),
  attach: (c: Command) => c.option('--attach', "send the input through the store's inbox and follow the session while a worker runs it (postgres:// stores)"),
  shutdownGraceMs: (c: Command) =>
    c.option('--shutdown-grace-ms <n>', 'on SIGTERM, let a running turn finish for this long before cutting it off (default 10000; the next resume continues it)', nonNegativeInteger),
  force: (c: Command) => c.option('--force', 'with --session or -c: resume a quarantined session anyway (the quarantine is lifted)'),
} as const

/** The name of an agent option (the key commander stores its value under). */
export type AgentOptionName = keyof typeof AGENT_OPTIONS

/** Every agent option, in the order `run --help` lists them. */
export const ALL_AGENT_OPTION_NAMES: readonly AgentOptionName[] = Object.keys(AGENT_OPTIONS) as AgentOptionName[]

/** The options a session-serving process cannot honour: they pick a session or shape one terminal's output. */
export const SESSION_OPTION_NAMES: readonly AgentOptionName[] = ['session', 'continue', 'json', 'print', 'raw', 'verbose', 'attach', 'force']

/** Adds the named agent options (all of them by default), in the order `run --help` lists them, then `--store`. */
export function addAgentOptions(command: Command, names: readonly AgentOptionName[] = ALL_AGENT_OPTION_NAMES): Command {
  for (const name of ALL_AGENT_OPTION_NAMES) if (names.includes(name)) AGENT_OPTIONS[name](command)
  return addStoreOption(command)
}

/** Where `bash` runs and when it keeps the network, as `--sandbox`, `--network` and `--network-ask` say. */
export function toolConfinement(flags: Pick<AgentFlags, 'sandbox' | 'network' | 'networkAsk'>): { readonly sandbox: SandboxMode; readonly network: NetworkPolicy } {
  return { sandbox: flags.sandbox ?? 'bwrap', network: flags.network === true ? true : flags.networkAsk === true ? 'per-call' : false }
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value]
}

/** commander argument parser for positive numbers (seconds). */
export function positiveNumber(value: string): number {
  const n = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value) || !(n > 0)) throw new InvalidArgumentError('expected a positive number')
  return n
}

function sandboxMode(value: string): SandboxMode {
  try {
    return parseSandboxMode(value)
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message)
  }
}

/** commander argument parser for a cap in US dollars: a positive decimal number (`0.5`, `2`, `$1.25`). */
export function usdAmount(value: string): number {
  const text = value.trim().replace(/^\$/, '')
  const n = Number(text)
  if (!/^\d+(\.\d+)?$|^\.\d+$/.test(text) || !(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('expected an amount in US dollars greater than 0, such as 0.50')
  return n
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

/** The config flags of `run`/`chat`. */
export function configFlagsOf(flags: AgentFlags): ConfigFlags {
  const picked: Record<string, unknown> = {
    provider: flags.provider,
    model: flags.model,
    baseUrl: flags.baseUrl,
    root: flags.root,
    maxSteps: flags.maxSteps,
    maxCost: flags.maxCost,
    store: flags.store,
    idleTimeout: flags.idleTimeout,
    responseTimeout: flags.responseTimeout,
    retries: flags.retries,
    reasoningEffort: flags.reasoningEffort,
    maxOutputTokens: flags.maxOutputTokens,
    header: flags.header,
    system: flags.system,
    projectFile: flags.projectFile,
    bashEnv: flags.bashEnv,
  }
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)) as ConfigFlags
}

/**
 * Resolves config, route, root and key before any session exists: a missing key or bad option fails here,
 * leaving nothing behind.
 */
export async function prepareRun(given: AgentFlags, env: NodeJS.ProcessEnv = process.env): Promise<PreparedRun> {
  // `--provider scripted --script FILE` names the same route twice: only another provider contradicts --script.
  const { provider: _scripted, ...withoutProvider } = given
  const flags: AgentFlags = given.script !== undefined && given.provider === 'scripted' ? withoutProvider : given
  const config = resolveConfig(configFlagsOf(flags), env)
  checkRouteFlags(flags)
  if (flags.session !== undefined && flags.continue === true) throw new CliError('--session and --continue both pick a session: pass one of them', EXIT.usage)
  if (flags.json === true && flags.print === true) throw new CliError('--json and --print both choose what stdout carries: pass one of them', EXIT.usage)
  const store = await cliStore(config)
  try {
    let resume: string | undefined
    let previous: StoredRoute | undefined
    let storedRoot: string | undefined
    const repairs: string[] = []
    let interrupted: PreparedRun['interrupted']
    if (flags.session !== undefined || flags.continue === true) {
      resume = flags.continue === true ? await mostRecentSession(store) : await resolveSessionRef(store, flags.session as string)
      refuseLiveSession(storeSpecOf(config), resume, 'continuing it')
      const stored = await store.read(resume)
      previous = storedRoute(stored.events)
      storedRoot = stored.header.cwd
      if (stored.tailRepair !== undefined) {
        repairs.push(`repaired session ${resume}: cut off an incomplete write at its end (line ${stored.tailRepair.line}, ${stored.tailRepair.bytes} bytes: ${stored.tailRepair.reason})`)
      }
      const closers = closerEvents(stored.events)
      const closedTurn = closers.find((e) => e.type === 'turn/end')
      if (closedTurn !== undefined) {
        const unknownCalls = closers.filter((e) => e.type === 'tool/result' && (e.data as { error?: { code?: string } }).error?.code === 'TOOL_OUTCOME_UNKNOWN').length
        interrupted = { turn: (closedTurn.data as { turn: number }).turn, unknownCalls }
      }
    } else if (flags.force === true) {
      throw new CliError('--force resumes a quarantined session: pass it with --session ID or --continue', EXIT.usage)
    }
    const route = modelRoute(config, flags, { env, ...(resume !== undefined ? { resume } : {}), ...(previous !== undefined ? { previous } : {}) })
    let root = flags.root !== undefined || config.sources.root !== 'default' ? config.root : (storedRoot ?? config.root)
    let scratchRoot = false
    if (route.scriptFile !== undefined && resume === undefined && flags.root === undefined && config.sources.root === 'default') {
      // A demo must not write into wherever the user happens to stand.
      root = mkdtempSync(join(tmpdir(), 'ledgerloop-demo-'))
      scratchRoot = true
    }
    const instructions = projectInstructions(config.system, root, config.projectFile)
    const baseURL = route.baseURL
    return {
      config,
      route,
      root,
      scratchRoot,
      store,
      instructions,
      repairs,
      ...(interrupted !== undefined ? { interrupted } : {}),
      ...(flags.force === true ? { force: true } : {}),
      ...(flags.shutdownGraceMs !== undefined ? { shutdownGraceMs: flags.shutdownGraceMs } : {}),
      ...toolConfinement(flags), ...(resume !== undefined ? { resume } : {}), ...(baseURL !== undefined ? { baseURL } : {}) }
  } catch (error) {
    await store.close()
    throw error
  }
}
