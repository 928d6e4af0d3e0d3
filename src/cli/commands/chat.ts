import type { Command } from 'commander'
import { createInterface, type Interface } from 'node:readline'
import type { Agent } from '../../loop/agent.js'
import { EXIT } from '../cli-error.js'
import { loadHistory, saveHistory } from '../chat-history.js'
import { cliPricing, costFigure, createCliHarness } from '../cli-harness.js'
import { startHarnessExtensions } from '../../app/harness-extensions.js'
import { LineInput } from '../line-input.js'
import { promptingApprover } from '../permission-prompt.js'
import { attachSessionOutput, costCapOption, type SessionOutput } from '../session-output.js'
import { watchOutsideStops } from '../run-signals.js'
import { styleFor, type Style } from '../style.js'
import { lastTurnReason } from '../../views/turn-outcome.js'
import type { SessionStore } from '../../store/types.js'
import type { PricingCatalogue } from '../../views/cost.js'
import { compactInChat } from './compact.js'
import { listSessionsPage, sessionsTable } from './sessions.js'
import { announce, openAgent, outputMode, removeScratch, reportTurnEnd } from './run.js'
import { addAgentOptions, prepareRun, type AgentFlags } from './agent-options.js'
import { attachChat } from '../attach.js'
import { undoInChat } from './rewind.js'

const HELP = [
  'Type a message and press Enter. End a line with \\ to continue it, or wrap several lines in """ … """.',
  '/cancel          cancel the running turn (Ctrl-C does the same; a second Ctrl-C quits)',
  '/fork            continue in a copy of this session (the original stays as it is)',
  '/undo            undo the last turn: its file changes and the conversation (continues in a fork)',
  '/compact         summarise the older history now (the recent turns stay as they are)',
  '/model [name]    show or switch the model for the next requests',
  '/sessions        list the 20 most recent sessions',
  '/exit            quit (so does Ctrl-D)',
].join('\n')

/**
 * `ledgerloop chat`: a conversation turn after turn. Permission questions are answered on the same input
 * (a terminal or a pipe); `--yes` answers them all with yes.
 */
export async function chatCommand(flags: AgentFlags): Promise<number> {
  if (flags.attach === true) return attachChat(flags)
  const prepared = await prepareRun(flags)
  const json = flags.json === true
  // In --json mode stdout carries only events; the prompt and notices go to stderr.
  const ui = json ? process.stderr : process.stdout
  const style = styleFor(process.stdout)
  const terminal = process.stdin.isTTY === true && ui.isTTY === true
  const home = prepared.config.home
  const rl = createInterface({
    input: process.stdin,
    output: ui,
    terminal,
    ...(terminal ? { history: loadHistory(home), historySize: 500, removeHistoryDuplicates: true } : {}),
  })
  if (terminal) rl.on('history', (entries: string[]) => saveHistory(home, entries))

  let agent: Agent | undefined
  let running = false
  let output: SessionOutput | undefined
  const input = new LineInput(rl, (line) => {
    if (!running || line.trim() !== '/cancel') return false
    agent?.cancel({ kind: 'user' })
    return true
  })
  // A permission answer is not a message: it stays out of the recalled (and saved) history.
  const readAnswer = async (signal: AbortSignal): Promise<string | undefined> => {
    const line = await input.next(signal)
    const history = (rl as unknown as { history?: string[] }).history
    if (terminal && line !== undefined && history !== undefined && history[0] === line) history.shift()
    return line
  }
  const ask =
    flags.yes === true
      ? async () => ({ answer: 'yes' as const, by: 'flag' as const })
      : promptingApprover(ui, readAnswer, { before: () => output?.renderer?.pause(), after: () => output?.renderer?.resume(), echo: !terminal })
  const harness = createCliHarness({ config: prepared.config, route: prepared.route, root: prepared.root, store: prepared.store, sandbox: prepared.sandbox, network: prepared.network, instructions: prepared.instructions.text, extensions: await startHarnessExtensions(prepared.config, flags), ask })
  let model = prepared.route.model
  harness.hooks.on('agent/request', async (_payload, next) => {
    const config = await next()
    return config.model === model ? config : { ...config, model }
  })
  const pricing = cliPricing(prepared.config)
  output = attachSessionOutput(harness, () => agent?.id, process.stdout, style, {
    mode: outputMode(flags),
    verbose: flags.verbose === true,
    maxAttempts: prepared.config.retry.maxAttempts,
    turnCost: (events) => costFigure(events, pricing),
    ...costCapOption(prepared.config.maxCostUsd, pricing, () => agent?.session),
  })
  const notice = (text: string): void => {
    if (json || flags.print === true) process.stderr.write(`${text}\n`)
    else output?.notice(text)
  }

  let exitCode: number = EXIT.ok
  let interrupts = 0
  let quitting: (() => void) | undefined
  const quit = new Promise<void>((resolve) => {
    quitting = resolve
  })
  const onInterrupt = (): void => {
    interrupts++
    if (interrupts >= 2) {
      exitCode = EXIT.interrupted
      agent?.cancel({ kind: 'user' })
      quitting?.()
      return
    }
    if (running) {
      agent?.cancel({ kind: 'user' })
      notice(style.dim('cancelling… (Ctrl-C again to quit)'))
    } else {
      notice(style.dim('(Ctrl-C again, /exit or Ctrl-D to quit)'))
      if (terminal) rl.prompt()
    }
  }
  rl.on('SIGINT', onInterrupt)
  process.on('SIGINT', onInterrupt)
  // SIGTERM and a closed stdout cancel the running turn and end the chat, like a second Ctrl-C but with the turn
  // closed and the log flushed first.
  const stops = watchOutsideStops((cause) => {
    agent?.cancel(cause)
    quitting?.()
  })

  try {
    for (const repair of prepared.repairs) process.stderr.write(`ledgerloop: ${repair}\n`)
    if (prepared.resume !== undefined) {
      agent = await openAgent(harness, prepared)
      announce(output, style, prepared, agent.id)
    } else if (prepared.route.scriptFile !== undefined) {
      notice(style.yellow(`[scripted] model replies come from ${prepared.route.scriptFile} — an offline demo, no real model is called`))
    }
    notice(style.dim(`ledgerloop chat · ${prepared.route.provider} · ${model} · tools in ${prepared.root} · /help for commands`))
    for (;;) {
      const text = await Promise.race([readMessage(input, rl, terminal), quit.then(() => undefined)])
      if (text === undefined || exitCode === EXIT.interrupted || stops.stopped !== undefined) break
      interrupts = 0
      const trimmed = text.trim()
      if (trimmed === '') continue
      if (trimmed.startsWith('/') && !trimmed.includes('\n')) {
        const [command = '', ...rest] = trimmed.split(/\s+/)
        const arg = rest.join(' ')
        if (command === '/exit' || command === '/quit') break
        else if (command === '/help') notice(HELP)
        else if (command === '/cancel') notice('nothing is running')
        else if (command === '/compact') notice(await compactInChat(agent))
        else if (command === '/sessions') notice(await recentSessions(prepared.store, pricing, style))
        else if (command === '/model') {
          if (arg !== '') model = arg
          notice(`model: ${model}${arg !== '' ? ' (from the next request on)' : ''}`)
        } else if (command === '/fork') {
          if (agent === undefined) {
            notice('nothing to fork yet: send a message first')
            continue
          }
          const parent = agent.id
          const child = await harness.forkSession(parent)
          await agent.dispose()
          agent = await harness.resumeAgent(child, { provider: prepared.route.provider, model, cwd: prepared.root })
          notice(`forked ${parent} → ${child}; you are now in the fork`)
        } else if (command === '/undo') {
          const undone = await undoInChat(harness, agent, { provider: prepared.route.provider, model, cwd: prepared.root })
          agent = undone.agent
          notice(undone.notice)
        } else notice(`unknown command ${command}; /help lists them`)
        continue
      }
      if (agent === undefined) {
        agent = await openAgent(harness, prepared)
        notice(style.dim(`session ${agent.id}`))
      }
      if (!terminal) notice(style.bold(`› ${text.replace(/\n/g, '\n  ')}`))
      running = true
      const turnFrom = agent.session.length
      // Input may have ended (a pipe): a hanging step holds no handle that would keep the process alive.
      const keepAlive = setInterval(() => {}, 60_000)
      try {
        agent.followup(text)
        await Promise.race([agent.whenIdle(), quit])
        if (stops.stopped !== undefined) await agent.whenIdle()
      } finally {
        clearInterval(keepAlive)
        running = false
      }
      if (exitCode === EXIT.interrupted || stops.stopped !== undefined) break
      const reason = lastTurnReason(agent.session.events)
      if (reason !== undefined) reportTurnEnd(reason, prepared, agent.session.events.slice(turnFrom))
    }
  } finally {
    process.off('SIGINT', onInterrupt)
    stops.dispose()
    if (terminal) saveHistory(home, (rl as unknown as { history?: string[] }).history ?? [])
    rl.close()
    output.dispose()
    try {
      // A writer that could not close rejects here (docs/stores.md, "When a write fails"): main() reports it.
      await harness.close()
    } catch (error) {
      if (prepared.scratchRoot) removeScratch(prepared.root)
      throw error
    }
  }
  if (prepared.scratchRoot) removeScratch(prepared.root)
  if (agent !== undefined && !json && flags.print !== true && stops.stopped === undefined) process.stdout.write(style.dim(`session ${agent.id} · ledgerloop inspect ${agent.id}\n`))
  return stops.exitCode ?? exitCode
}

/** One message: a line, lines joined by a trailing `\`, or a `"""` block. Undefined at end of input. */
async function readMessage(input: LineInput, rl: Interface, terminal: boolean): Promise<string | undefined> {
  const prompt = (text: string): void => {
    if (!terminal) return
    rl.setPrompt(text)
    rl.prompt()
  }
  prompt('› ')
  let line = await input.next()
  if (line === undefined) return undefined
  if (line.trim() === '"""') {
    const lines: string[] = []
    for (;;) {
      prompt('… ')
      const next = await input.next()
      if (next === undefined || next.trim() === '"""') break
      lines.push(next)
    }
    return lines.join('\n')
  }
  const lines: string[] = []
  while (line.endsWith('\\')) {
    lines.push(line.slice(0, -1))
    prompt('… ')
    const next = await input.next()
    if (next === undefined) return lines.join('\n')
    line = next
  }
  lines.push(line)
  return lines.join('\n')
}

/** Registers `chat`. */
export function registerChat(program: Command, exit: { code: number }): void {
  addAgentOptions(program.command('chat').description('an interactive conversation (type /help inside)'))
    .addHelpText('after', '\nExamples:\n  ledgerloop chat\n  ledgerloop chat -c                 continue the most recent session\n  ledgerloop chat --session 56af     continue a session by id prefix')
    .action(async (flags: AgentFlags) => {
      exit.code = await chatCommand(flags)
    })
}

/** `/sessions`: the 20 newest sessions (only their logs are read), and how many there are in all. */
async function recentSessions(store: SessionStore, pricing: PricingCatalogue, style: Style): Promise<string> {
  const page = await listSessionsPage(store, pricing, { limit: CHAT_SESSIONS_SHOWN })
  const table = sessionsTable(page.rows, style.dim).trimEnd()
  const cut = page.total > page.rows.length ? `\n${style.dim(`showing ${page.rows.length} of ${page.total}; ledgerloop sessions --all lists every one`)}` : ''
  return table + cut
}

const CHAT_SESSIONS_SHOWN = 20
