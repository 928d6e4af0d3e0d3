import type { Command } from 'commander'
import { readFileSync, rmSync } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Agent } from '../../loop/agent.js'
import { structuredOutput, type OutputSchema } from '../../loop/structured-output.js'
import type { JsonSchema } from '../../tools/types.js'
import type { Harness } from '../../harness/harness.js'
import type { SessionEvent, TurnEndReason } from '../../session/events.js'
import { attachRun } from '../attach.js'
import { CliError, EXIT } from '../cli-error.js'
import { DEMO_PROMPT, DEMO_SCRIPT } from '../demo.js'
import { cliPricing, costFigure, createCliHarness } from '../cli-harness.js'
import { startHarnessExtensions } from '../../app/harness-extensions.js'
import { CLI_ROUTE_EVENT } from '../../app/providers.js'
import { promptingApprover } from '../permission-prompt.js'
import { exitCodeAfter, watchOutsideStops } from '../run-signals.js'
import { attachSessionOutput, costCapOption, type SessionOutput } from '../session-output.js'
import { styleFor, type Style } from '../style.js'
import { endpointHost, endpointOf } from '../endpoint.js'
import { describeReason, formatDuration } from '../../views/turn-outcome.js'
import { exitCodeFor, failureHint } from '../turn-exit.js'
import { addAgentOptions, prepareRun, type AgentFlags, type PreparedRun } from './agent-options.js'

/** Reads the whole of stdin (a piped prompt: `echo "…" | ledgerloop run`, `ledgerloop run -`). */
async function readStdin(): Promise<string> {
  const parts: Buffer[] = []
  for await (const part of process.stdin) parts.push(part as Buffer)
  // `echo "…" |` ends the prompt with a newline the user never typed as part of it.
  return Buffer.concat(parts).toString('utf8').replace(/(\r?\n)+$/, '')
}

/** The prompt: the arguments, or stdin for `-` (or no arguments with input piped in). */
export async function promptOf(words: readonly string[]): Promise<string> {
  if ((words.length === 1 && words[0] === '-') || (words.length === 0 && process.stdin.isTTY !== true)) return readStdin()
  if (words.length === 0) throw new CliError('no prompt: ledgerloop run "what to do" (or pipe it in: echo "…" | ledgerloop run)', EXIT.usage)
  return words.join(' ')
}

/** How stdout is used by `run`/`chat`. */
export function outputMode(flags: AgentFlags): 'transcript' | 'json' | 'print' {
  return flags.json === true ? 'json' : flags.print === true ? 'print' : 'transcript'
}

/**
 * `ledgerloop run PROMPT`: one turn, then exit with the turn's outcome (0 completed / max-tokens, 1 error,
 * blocked or a budget, 130 Ctrl-C, 143 SIGTERM, 141 stdout closed).
 */
export async function runCommand(words: readonly string[], flags: AgentFlags): Promise<number> {
  const prompt = await promptOf(words)
  if (prompt.trim() === '') throw new CliError('the prompt is empty', EXIT.usage)
  const schema = flags.outputSchema !== undefined ? readOutputSchema(flags.outputSchema) : undefined
  if (flags.attach === true) {
    if (schema !== undefined) throw new CliError('--output-schema needs the turn to run here: it cannot be combined with --attach', EXIT.usage)
    return attachRun(prompt, flags)
  }
  const prepared = await prepareRun(flags)
  const style = styleFor(process.stdout)
  const mode = outputMode(flags)
  // Only a person at a terminal can be asked; anywhere else an ask is denied unless --yes answered it already.
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && mode === 'transcript'
  let output: SessionOutput | undefined
  const ask =
    flags.yes === true
      ? async () => ({ answer: 'yes' as const, by: 'flag' as const })
      : interactive
        ? promptingApprover(process.stdout, readTtyLine, { before: () => output?.renderer?.pause(), after: () => output?.renderer?.resume() })
        : prepared.scratchRoot
          ? // A scripted demo in a throwaway scratch folder: file tools cannot reach anything else, so their asks
            // are approved; the shell is not confined to the folder, so it stays denied.
            async (question: { tool: string }) => ({ answer: question.tool === 'bash' ? ('no' as const) : ('yes' as const), by: 'auto' as const })
          : undefined
  const harness = createCliHarness({
    config: prepared.config,
    route: prepared.route,
    root: prepared.root,
    store: prepared.store,
    sandbox: prepared.sandbox,
    network: prepared.network,
    instructions: prepared.instructions.text,
    extensions: await startHarnessExtensions(prepared.config, flags),
    ...(ask !== undefined ? { ask } : {}),
  })
  let agent: Agent | undefined
  const pricing = cliPricing(prepared.config)
  output = attachSessionOutput(harness, () => agent?.id, process.stdout, style, {
    mode,
    verbose: flags.verbose === true,
    maxAttempts: prepared.config.retry.maxAttempts,
    ...endpointOption(prepared),
    // Rendered where escape codes are shown as styles; anywhere else (a pipe, NO_COLOR, --raw) the text stays as written.
    markdown: style.color && flags.raw !== true,
    turnCost: (events) => costFigure(events, pricing),
    ...costCapOption(prepared.config.maxCostUsd, pricing, () => agent?.session),
  })
  try {
    for (const repair of prepared.repairs) process.stderr.write(`ledgerloop: ${repair}\n`)
    agent = await openAgent(harness, prepared)
    reportInterrupted(agent, prepared)
    announce(output, style, prepared, agent.id)
    return await runTurn(agent, prompt, output, prepared, schema, mode)
  } finally {
    output.dispose()
    try {
      // A writer that could not close rejects here: main() reports it on stderr with exit 1 (docs/stores.md).
      await harness.close()
    } finally {
      if (prepared.scratchRoot) removeScratch(prepared.root)
    }
  }
}

/** The `endpoint` option of the session output: the host the waiting spinner names. */
export function endpointOption(prepared: PreparedRun): { readonly endpoint?: string } {
  const host = endpointHost(endpointOf(prepared))
  return host !== undefined ? { endpoint: host } : {}
}

/** Removes a scripted demo's scratch folder once the run is over (what it wrote is in the log). */
export function removeScratch(root: string): void {
  rmSync(root, { recursive: true, force: true })
}

/** Creates the session, or resumes `--session`; a new session (or a changed endpoint) logs its base URL. */
export async function openAgent(harness: Harness, prepared: PreparedRun): Promise<Agent> {
  const { route, root } = prepared
  const agent =
    prepared.resume !== undefined
      ? await harness.resumeAgent(prepared.resume, { provider: route.provider, model: route.model, cwd: root, ...(prepared.force === true ? { force: true } : {}) })
      : await harness.createAgent({ provider: route.provider, model: route.model, cwd: root })
  if (prepared.baseURL !== undefined) {
    let last: string | undefined
    for (const event of agent.session.events) if (event.type === CLI_ROUTE_EVENT) last = (event.data as { baseURL?: string }).baseURL
    // Ignorable: the request header holds provider and model, but not the endpoint a resume should go back to.
    if (last !== prepared.baseURL) agent.session.append(CLI_ROUTE_EVENT, { provider: route.provider, baseURL: prepared.baseURL }, { ignorable: true })
  }
  return agent
}

/**
 * One line about the turn a crash interrupted, once the agent is open: being continued (the default), or only
 * closed. A log an earlier resume had closed but not continued gets the continuation line too.
 */
export function reportInterrupted(agent: Agent, prepared: PreparedRun): void {
  const events = agent.session.events
  let continuation: { turn: number; continues: number } | undefined
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as (typeof events)[number]
    if (e.type !== 'turn/start') continue
    const d = e.data as { turn: number; continues?: number }
    if (d.continues !== undefined && agent.status === 'running') continuation = { turn: d.turn, continues: d.continues }
    break
  }
  const unknown = prepared.interrupted?.unknownCalls ?? 0
  const calls = unknown > 0 ? `, ${unknown} tool call${unknown === 1 ? '' : 's'} with an unknown outcome` : ''
  if (continuation !== undefined) {
    process.stderr.write(`ledgerloop: turn ${continuation.continues} was interrupted (the process stopped mid-turn${calls}); continuing it as turn ${continuation.turn}\n`)
  } else if (prepared.interrupted !== undefined) {
    process.stderr.write(`ledgerloop: turn ${prepared.interrupted.turn} was interrupted (the process stopped mid-turn${calls}); closed it as 'interrupted'\n`)
  }
}

/** `deepseek · deepseek-flash · https://api.deepseek.com`: the route a run talks to, its endpoint included. */
export function routeLine(prepared: PreparedRun): string {
  const endpoint = endpointOf(prepared)
  return `${prepared.route.provider} · ${prepared.route.model}${endpoint !== undefined ? ` · ${endpoint}` : ''}`
}

/**
 * The opening lines, each fact once: which model and endpoint (or that it is scripted), which session, where
 * tools work, which instructions. `chat` passes its own heading, which names the route and the tool root itself.
 */
export function announce(output: SessionOutput, style: Style, prepared: PreparedRun, sessionId: string | undefined, options: { readonly heading?: string } = {}): void {
  const { route } = prepared
  const scratch = prepared.scratchRoot ? ' (scratch folder, removed at exit; --root DIR keeps the files)' : ''
  if (route.scriptFile !== undefined) output.notice(style.yellow(`[scripted] model replies come from ${route.scriptFile} — an offline demo, no real model is called`))
  if (options.heading !== undefined) {
    output.notice(style.dim(options.heading))
    if (sessionId !== undefined) output.notice(style.dim(`${prepared.resume !== undefined ? 'resumed' : 'session'} ${sessionId}`))
  } else {
    if (route.scriptFile === undefined) output.notice(style.dim(routeLine(prepared)))
    output.notice(style.dim(`${prepared.resume !== undefined ? 'resumed' : 'session'} ${sessionId ?? ''} · tools in ${prepared.root}${scratch}`))
  }
  for (const source of prepared.instructions.sources) output.notice(style.dim(`instructions: ${source}`))
  // An unsandboxed shell is a choice the user must keep seeing, so it goes into every turn's footer.
  if (prepared.config.shell && prepared.sandbox === 'off') output.renderer?.setFooterNote(style.yellow('sandbox: off'))
  else if (prepared.config.shell && prepared.network !== false) output.renderer?.setFooterNote(style.yellow(prepared.network === true ? 'network: on' : 'network: on request'))
}

/**
 * `--output-schema FILE`: the JSON Schema, read and compiled up front, so a missing file or a schema that does not
 * compile is a usage error before any session is opened.
 */
export function readOutputSchema(file: string): JsonSchema {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new CliError(`--output-schema: cannot read ${file}: ${(error as Error).message}`, EXIT.usage)
  }
  let schema: unknown
  try {
    schema = JSON.parse(text)
  } catch (error) {
    throw new CliError(`--output-schema: ${file} is not JSON: ${(error as Error).message}`, EXIT.usage)
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new CliError(`--output-schema: ${file} must hold a JSON Schema object`, EXIT.usage)
  try {
    structuredOutput(schema as JsonSchema)
  } catch (error) {
    throw new CliError(`--output-schema: ${(error as Error).message}`, EXIT.usage)
  }
  return schema as JsonSchema
}

async function runTurn(agent: Agent, prompt: string, output: SessionOutput, prepared: PreparedRun, schema?: OutputSchema, mode?: 'transcript' | 'json' | 'print'): Promise<number> {
  const firstNewSeq = agent.session.length
  let interrupts = 0
  const onSigint = (): void => {
    interrupts++
    if (interrupts > 1) process.exit(EXIT.interrupted) // a second Ctrl-C does not wait for the turn to close
    agent.cancel({ kind: 'user' })
  }
  process.on('SIGINT', onSigint)
  // A shutdown keeps queued input (it is still owed); a closed stdout is a cancel like Ctrl-C.
  const stops = watchOutsideStops((cause) => agent.cancel(cause, { keepInbox: cause.kind === 'disposed' }), {
    ...(prepared.shutdownGraceMs !== undefined ? { graceMs: prepared.shutdownGraceMs } : {}),
  })
  // A scripted step that hangs holds no socket or timer; without this the process would exit mid-turn.
  const keepAlive = setInterval(() => {}, 60_000)
  try {
    if (schema === undefined) {
      agent.followup(prompt)
    } else {
      const result = await agent.run(prompt, { output: schema })
      // The answer parsed, after the events: the one line of stdout that is not an event (no seq).
      if (mode === 'json' && result.output !== undefined) process.stdout.write(`${JSON.stringify({ type: 'output', turn: result.turn, output: result.output })}\n`)
    }
    await agent.whenIdle()
  } finally {
    clearInterval(keepAlive)
    process.off('SIGINT', onSigint)
    stops.dispose()
  }
  const ended = agent.session.events.slice(firstNewSeq).filter((e: SessionEvent) => e.type === 'turn/end')
  const reason = (ended[ended.length - 1]?.data as { reason?: TurnEndReason } | undefined)?.reason
  if (reason === undefined) {
    output.notice('no turn ran')
    return exitCodeAfter(stops, EXIT.failed)
  }
  if (stops.stopped === undefined) reportTurnEnd(reason, prepared, agent.session.events.slice(firstNewSeq))
  return exitCodeAfter(stops, exitCodeFor(reason))
}

/**
 * The final word on a turn that did not complete goes to stderr (the footer on stdout says it too), with what to
 * do about it where we can tell.
 */
export function reportTurnEnd(reason: TurnEndReason, prepared: Pick<PreparedRun, 'baseURL' | 'config'>, turnEvents: readonly SessionEvent[] = []): void {
  if (reason.kind === 'max-tokens') process.stderr.write('warning: the reply hit the output token limit and was cut off (raise --max-output-tokens or ask for less)\n')
  if (reason.kind === 'completed' || reason.kind === 'max-tokens' || (reason.kind === 'aborted' && reason.reason.kind === 'user')) return
  process.stderr.write(`ledgerloop: turn ended ${describeReason(reason)}\n`)
  const retries = turnEvents.filter((e) => e.type === 'llm/retry')
  if (reason.kind === 'error' && retries.length > 0) {
    const waited = retries.reduce((sum, e) => sum + ((e.data as { delayMs?: number }).delayMs ?? 0), 0)
    process.stderr.write(`  gave up after ${retries.length + 1} attempts (${formatDuration(waited)} of retry waits; --retries and --idle-timeout set the budget)\n`)
  }
  const hint = failureHint(reason, prepared)
  if (hint !== undefined) process.stderr.write(`  hint: ${hint}\n`)
}

// One line from the terminal for a permission question; a cancelled turn withdraws the question.
function readTtyLine(signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true })
    let settled = false
    const done = (line: string | undefined): void => {
      // rl.close() emits 'close' synchronously: without this guard that re-entry answered `undefined` (a denial)
      // before the typed line could resolve.
      if (settled) return
      settled = true
      signal.removeEventListener('abort', onAbort)
      resolve(line)
      rl.close()
    }
    const onAbort = (): void => done(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    rl.once('line', done)
    rl.once('close', () => done(undefined))
    // In raw mode Ctrl-C reaches readline, not the process: treat it as the cancel it means.
    rl.once('SIGINT', () => {
      done(undefined)
      process.emit('SIGINT')
    })
  })
}

/** Registers `run`. */
export function registerRun(program: Command, exit: { code: number }): void {
  const command = program
    .command('run')
    .description('run one turn for PROMPT and exit with its outcome')
    .argument('[prompt...]', 'what to ask; - (or nothing, with input piped in) reads it from stdin')
    .option('--demo', `the offline demo: a scripted model (no key) takes notes in a scratch folder (prompt default "${DEMO_PROMPT}")`)
    .option('--output-schema <file>', 'the final answer must be JSON valid under this JSON Schema file (repaired up to twice, else exit 1 with OUTPUT_INVALID)')
  addAgentOptions(command)
    .addHelpText('after', RUN_EXAMPLES)
    .action(async (prompt: string[], flags: AgentFlags & { readonly demo?: boolean }) => {
      if (flags.demo !== true) {
        exit.code = await runCommand(prompt, flags)
        return
      }
      if (flags.script !== undefined) throw new CliError('--demo plays the shipped demo script; leave out --script (or drop --demo)', EXIT.usage)
      exit.code = await runCommand(prompt.length > 0 ? prompt : [DEMO_PROMPT], { ...flags, script: DEMO_SCRIPT })
    })
}

const RUN_EXAMPLES = `
Examples:
  ledgerloop run "why does npm test fail?"
  ledgerloop run -c "now fix it"                       continue the most recent session
  git diff | ledgerloop run --print "review this diff"  prompt from stdin, only the answer on stdout
  ledgerloop run --yes --root ./sandbox "tidy the notes"
  ledgerloop run --demo                                offline demo: scripted model, no key
  ledgerloop run --script my-script.json "Take notes"  your own scripted model (a JSON array of script steps)
  ledgerloop run --output-schema answer.schema.json --json "rate README.md"   last stdout line: {"type":"output",…}`
