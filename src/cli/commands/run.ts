import { createInterface } from 'node:readline'
import type { Agent } from '../../agent/agent.js'
import type { Harness } from '../../agent/harness.js'
import type { SessionEvent, TurnEndReason } from '../../session/events.js'
import { attachRun } from '../attach.js'
import { CliError, EXIT } from '../cli-error.js'
import { createCliHarness } from '../cli-harness.js'
import { promptingApprover } from '../permission-prompt.js'
import { attachSessionOutput, type SessionOutput } from '../session-output.js'
import { styleFor, type Style } from '../style.js'
import { exitCodeFor } from '../turn-outcome.js'
import { prepareRun, type AgentFlags, type PreparedRun } from './agent-options.js'

/**
 * `ledgerloop run PROMPT`: one turn, then exit with the turn's outcome (0 completed / max-tokens, 1 error,
 * blocked or a budget, 130 Ctrl-C).
 */
export async function runCommand(prompt: string, flags: AgentFlags): Promise<number> {
  if (prompt.trim() === '') throw new CliError('the prompt is empty', EXIT.usage)
  if (flags.attach === true) return attachRun(prompt, flags)
  const prepared = await prepareRun(flags)
  const style = styleFor(process.stdout)
  const json = flags.json === true
  // Only a person at a terminal can be asked; anywhere else an ask is denied unless --yes answered it already.
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true && !json
  let output: SessionOutput | undefined
  const ask =
    flags.yes === true
      ? async () => 'yes' as const
      : interactive
        ? promptingApprover(process.stdout, readTtyLine, { before: () => output?.renderer?.pause(), after: () => output?.renderer?.resume() })
        : prepared.scratchRoot
          ? // A scripted demo in a throwaway scratch folder: file tools cannot reach anything else, so their asks
            // are approved; the shell is not confined to the folder, so it stays denied.
            async (question: { tool: string }) => (question.tool === 'bash' ? ('no' as const) : ('yes' as const))
          : undefined
  const harness = createCliHarness({ config: prepared.config, route: prepared.route, root: prepared.root, ...(ask !== undefined ? { ask } : {}) })
  let agent: Agent | undefined
  output = attachSessionOutput(harness, () => agent?.id, process.stdout, style, json)
  try {
    agent = await openAgent(harness, prepared)
    announce(output, style, prepared, agent.id)
    return await runTurn(agent, prompt, output)
  } finally {
    output.dispose()
    await harness.close()
  }
}

/** Creates the session, or resumes `--session`. */
export async function openAgent(harness: Harness, prepared: PreparedRun): Promise<Agent> {
  const { route, root } = prepared
  if (prepared.resume !== undefined) return harness.resumeAgent(prepared.resume, { provider: route.provider, model: route.model, cwd: root })
  return harness.createAgent({ provider: route.provider, model: route.model, cwd: root })
}

/** The opening lines: which model (and that it is scripted), where tools work, which session. */
export function announce(output: SessionOutput, style: Style, prepared: PreparedRun, sessionId: string): void {
  const { route } = prepared
  if (route.scriptFile !== undefined) {
    output.notice(style.yellow(`[scripted] model replies come from ${route.scriptFile} — an offline demo, no real model is called`))
  } else {
    output.notice(style.dim(`${route.provider} · ${route.model}`))
  }
  output.notice(style.dim(`${prepared.resume !== undefined ? 'resumed' : 'session'} ${sessionId} · tools in ${prepared.root}${prepared.scratchRoot ? ' (scratch folder)' : ''}`))
}

async function runTurn(agent: Agent, prompt: string, output: SessionOutput): Promise<number> {
  const firstNewSeq = agent.session.length
  let interrupts = 0
  const onSigint = (): void => {
    interrupts++
    if (interrupts > 1) process.exit(EXIT.interrupted) // a second Ctrl-C does not wait for the turn to close
    agent.cancel({ kind: 'user' })
  }
  process.on('SIGINT', onSigint)
  // A scripted step that hangs holds no socket or timer; without this the process would exit mid-turn.
  const keepAlive = setInterval(() => {}, 60_000)
  try {
    agent.followup(prompt)
    await agent.whenIdle()
  } finally {
    clearInterval(keepAlive)
    process.off('SIGINT', onSigint)
  }
  const ended = agent.session.events.slice(firstNewSeq).filter((e: SessionEvent) => e.type === 'turn/end')
  const reason = (ended[ended.length - 1]?.data as { reason?: TurnEndReason } | undefined)?.reason
  if (reason === undefined) {
    output.notice('no turn ran')
    return EXIT.failed
  }
  if (reason.kind === 'max-tokens') process.stderr.write('warning: the reply hit the output token limit and was cut off (raise maxTokens or ask for less)\n')
  if (reason.kind !== 'completed' && reason.kind !== 'max-tokens' && !(reason.kind === 'aborted' && reason.reason.kind === 'user')) {
    // The transcript footer already says it; stderr carries it for scripts that only watch the exit status.
    if (output.renderer === undefined) process.stderr.write(`turn ended: ${JSON.stringify(reason)}\n`)
  }
  return exitCodeFor(reason)
}

// One line from the terminal for a permission question; a cancelled turn withdraws the question.
function readTtyLine(signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: true })
    const done = (line: string | undefined): void => {
      signal.removeEventListener('abort', onAbort)
      rl.close()
      resolve(line)
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
