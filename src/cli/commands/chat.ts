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
import { pickerLines, RESUME_PICKER_SIZE } from '../session-picker.js'
import { resolveSessionRef } from '../session-ref.js'
import { isSubagentSession } from '../../views/child-sessions.js'
import { announce, endpointOption, openAgent, outputMode, removeScratch, reportInterrupted, reportTurnEnd, routeLine } from './run.js'
import { addAgentOptions, prepareRun, type AgentFlags } from './agent-options.js'
import { attachChat } from '../attach.js'
import { parseUndoArgument, undoInChat, type ChatUndoRecord } from './rewind.js'

const HELP = [
  'Type a message and press Enter. End a line with \\ to continue it, or wrap several lines in """ … """.',
  '/cancel          cancel the running turn (Ctrl-C does the same; a second Ctrl-C quits)',
  '/fork            continue in a copy of this session (the original stays as it is)',
  '/undo [--force]  undo the last turn: its file changes and the conversation (continues in a fork);',
  '                 --force also restores files changed outside the agent (right after an undo that left conflicts: redoes it)',
  '/compact         summarise the older history now (the recent turns stay as they are)',
  '/model [name]    show or switch the model for the next requests',
  '/sessions        list the 20 most recent sessions',
  '/resume [ID]     continue another session: by id (a prefix is enough), or picked from a numbered list',
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
  let lastUndo: ChatUndoRecord | undefined
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
    ...endpointOption(prepared),
    // Rendered where escape codes are shown as styles; anywhere else (a pipe, NO_COLOR, --raw) the text stays as written.
    markdown: style.color && flags.raw !== true,
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
  // SIGTERM ends the chat: no more input, the running turn may finish within the grace, then it is cut off (the
  // next resume continues it). A closed stdout cancels at once. Either way the turn is closed and flushed first.
  const stops = watchOutsideStops((cause) => agent?.cancel(cause, { keepInbox: cause.kind === 'disposed' }), {
    ...(prepared.shutdownGraceMs !== undefined ? { graceMs: prepared.shutdownGraceMs } : {}),
    onSigterm: () => quitting?.(),
  })

  try {
    for (const repair of prepared.repairs) process.stderr.write(`ledgerloop: ${repair}\n`)
    if (prepared.resume !== undefined) {
      agent = await openAgent(harness, prepared)
      reportInterrupted(agent, prepared)
    }
    // One heading names the route (endpoint included) and the tool root; a resumed session adds its id below.
    const scratch = prepared.scratchRoot ? ' (scratch folder, removed at exit)' : ''
    announce(output, style, prepared, agent?.id, { heading: `ledgerloop chat · ${routeLine(prepared)} · tools in ${prepared.root}${scratch} · /help for commands` })
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
        else if (command === '/resume') {
          // The number typed is an answer, not a message: kept out of the history like a permission answer.
          const id = await chooseSession(arg, prepared.store, pricing, notice, () => readAnswer(new AbortController().signal))
          if (id === undefined) continue
          if (id === agent?.id) {
            notice(`already in session ${id}`)
            continue
          }
          try {
            const next = await harness.resumeAgent(id, { provider: prepared.route.provider, model, cwd: prepared.root })
            await agent?.dispose()
            agent = next
            notice(`resumed ${id} · ${lastTurnReason(next.session.events)?.kind ?? 'no turns yet'}`)
          } catch (error) {
            notice(`cannot resume ${id}: ${(error as Error).message}`)
          }
        }
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
          const parsed = parseUndoArgument(arg)
          if ('usage' in parsed) {
            notice(parsed.usage)
            continue
          }
          const undone = await undoInChat(harness, agent, { provider: prepared.route.provider, model, cwd: prepared.root }, { force: parsed.force, ...(lastUndo !== undefined ? { previous: lastUndo } : {}) })
          agent = undone.agent
          if (undone.record !== undefined) lastUndo = undone.record
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

/**
 * `/resume [ID]`: the session an id (prefix) names, or one picked by its number from the recent sessions (a
 * numbered list, since the chat's own line editor owns the keys). Undefined when nothing was chosen.
 */
async function chooseSession(ref: string, store: SessionStore, pricing: PricingCatalogue, notice: (text: string) => void, readLine: () => Promise<string | undefined>): Promise<string | undefined> {
  try {
    if (ref !== '') return await resolveSessionRef(store, ref)
  } catch (error) {
    notice((error as Error).message)
    return undefined
  }
  const rows = (await listSessionsPage(store, pricing, { limit: RESUME_PICKER_SIZE, keep: (s) => !isSubagentSession(s) })).rows.filter((r) => r.problem === undefined)
  if (rows.length === 0) {
    notice('no sessions to resume')
    return undefined
  }
  const width = (process.stdout.columns ?? 100) - 6
  notice(pickerLines(rows, width).map((line, i) => `${String(i + 1).padStart(3)}  ${line}`).join('\n'))
  notice('resume which? type its number (Enter alone cancels)')
  const answer = (await readLine())?.trim() ?? ''
  const n = Number(answer)
  if (answer === '' || !Number.isInteger(n) || n < 1 || n > rows.length) {
    if (answer !== '') notice(`no session number ${answer}`)
    return undefined
  }
  return (rows[n - 1] as (typeof rows)[number]).id
}
