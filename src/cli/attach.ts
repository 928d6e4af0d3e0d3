import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { HarnessError } from '../errors/harness-error.js'
import { createUserMessage } from '../llm/messages.js'
import type { UserMessage } from '../llm/types.js'
import type { TurnEndReason } from '../session/events.js'
import { Session } from '../session/session.js'
import type { PostgresStore } from '../store/postgres/postgres-store.js'
import { CliError, EXIT } from './cli-error.js'
import { isPostgresStoreUrl, loadPostgresStoreModule } from '../app/store-spec.js'
import { UsageError } from '../app/usage-error.js'
import { describeReason } from '../views/turn-outcome.js'
import { resolveConfig } from '../app/config.js'
import { cliPricing, costFigure } from './cli-harness.js'
import { terminalMarkdown } from './markdown.js'
import { TranscriptRenderer } from './render.js'
import { styleFor } from './style.js'
import { exitCodeFor } from './turn-exit.js'

/** What `run|chat --attach` needs from the command line. */
export interface AttachFlags {
  readonly store?: string
  readonly session?: string
  readonly root?: string
  readonly json?: boolean
  readonly raw?: boolean
}

/**
 * `ledgerloop run --store postgres://… --attach PROMPT`: sends PROMPT through the session's inbox (a new
 * session, or `--session ID`) and follows the session's events live while a worker does the work; exits with
 * the outcome of the turn that took the prompt. Ctrl-C sends a cancel through the inbox and waits for that turn
 * to end. Nothing here runs a model or a tool: the process needs no provider key.
 */
export async function attachRun(prompt: string, flags: AttachFlags): Promise<number> {
  const store = await openAttachedStore(flags)
  try {
    const id = await attachedSession(store, flags)
    const after = (await store.read(id)).events.length - 1
    const message = createUserMessage(prompt)
    process.stderr.write(`session ${id} (attached: a worker runs it)\n`)
    await store.send(id, { kind: 'followup', message })
    return await followTurn(store, id, after, message, flags)
  } finally {
    await store.close()
  }
}

/** `ledgerloop chat --store postgres://… --attach`: each line is sent as a followup and its turn followed. */
export async function attachChat(flags: AttachFlags): Promise<number> {
  const store = await openAttachedStore(flags)
  const lines = createInterface({ input: process.stdin, terminal: false })
  try {
    const id = await attachedSession(store, flags)
    process.stderr.write(`session ${id} (attached: a worker runs it; an empty line or end of input quits)\n`)
    let code: number = EXIT.ok
    for await (const line of lines) {
      if (line.trim() === '') break
      const after = (await store.read(id)).events.length - 1
      const message = createUserMessage(line)
      await store.send(id, { kind: 'followup', message })
      code = await followTurn(store, id, after, message, flags)
    }
    return code
  } finally {
    lines.close()
    await store.close()
  }
}

async function openAttachedStore(flags: AttachFlags): Promise<PostgresStore> {
  if (flags.store === undefined || !isPostgresStoreUrl(flags.store)) throw new CliError('--attach needs a shared store: --store postgres://user@host:port/db', EXIT.usage)
  try {
    return await (await loadPostgresStoreModule()).openPostgresStoreFromUrl(flags.store)
  } catch (error) {
    if (error instanceof HarnessError && !(error instanceof UsageError)) throw new CliError(`${error.message} (${error.code})`, error.code === 'INVALID_CONFIG' ? EXIT.usage : EXIT.failed)
    throw error
  }
}

async function attachedSession(store: PostgresStore, flags: AttachFlags): Promise<string> {
  if (flags.session !== undefined) {
    if (!(await store.has(flags.session))) throw new CliError(`no session '${flags.session}' in the store`, EXIT.usage)
    return flags.session
  }
  const session = new Session({ header: { cwd: resolve(flags.root ?? process.cwd()) } })
  await store.createDetached(session.header)
  return session.id
}

/**
 * Prints the session's events after `after` until the turn that took `message` ends; returns its exit code.
 * The first Ctrl-C sends a cancel through the inbox; the second stops following at once.
 */
async function followTurn(store: PostgresStore, id: string, after: number, message: UserMessage, flags: AttachFlags): Promise<number> {
  const json = flags.json === true
  const stop = new AbortController()
  let cancelled = false
  // The same transcript as a local run (reasoning, tool lines, the footer with tokens and cost), worded for a
  // turn someone else may cancel: only a cancel sent from here is "cancelled by you".
  const renderer = json ? undefined : attachedRenderer(flags, () => cancelled)
  const onInterrupt = (): void => {
    if (cancelled) return stop.abort()
    cancelled = true
    process.stderr.write('\ncancelling (Ctrl-C again to stop following)\n')
    void store.send(id, { kind: 'cancel' }).catch(() => undefined)
  }
  process.on('SIGINT', onInterrupt)
  let ourTurn: number | undefined
  let turn: number | undefined
  try {
    for await (const event of store.follow(id, { after, signal: stop.signal })) {
      if (renderer === undefined) process.stdout.write(JSON.stringify(event) + '\n')
      else renderer.handle(event)
      const data = event.data as { turn?: number; id?: string; reason?: TurnEndReason; outcome?: string }
      if (event.type === 'turn/start') turn = data.turn
      if (event.type === 'user/message' && data.id === message.id) ourTurn = turn
      // Our cancel reached the session before the prompt's turn began: it cleared the queued prompt.
      if (event.type === 'agent/inbox/spliced' && cancelled && ourTurn === undefined && data.outcome === 'canceled') return EXIT.interrupted
      if (event.type === 'turn/end' && ourTurn !== undefined && data.turn === ourTurn) {
        const reason = data.reason as TurnEndReason
        const elsewhere = cancelledElsewhere(reason, cancelled)
        if (!json && reason.kind !== 'completed') process.stderr.write(`turn ended: ${elsewhere ? CANCELLED_ELSEWHERE : describeReason(reason)}\n`)
        // 130 means "you pressed Ctrl-C"; a cancel from another client or the page is a turn that did not finish.
        return elsewhere ? EXIT.failed : exitCodeFor(reason)
      }
    }
    return EXIT.interrupted
  } finally {
    renderer?.dispose()
    process.off('SIGINT', onInterrupt)
  }
}

const CANCELLED_ELSEWHERE = 'aborted (cancelled through the session inbox by another client, not from here)'

/** A user cancel this process did not send: another attached client or the page sent it. */
function cancelledElsewhere(reason: TurnEndReason, cancelledHere: boolean): boolean {
  return reason.kind === 'aborted' && reason.reason.kind === 'user' && !cancelledHere
}

function attachedRenderer(flags: AttachFlags, cancelledHere: () => boolean): TranscriptRenderer {
  // Prices only: a broken config file must not stop anyone from following a session.
  const pricing = cliPricing(resolveConfig(flags.store !== undefined ? { store: flags.store } : {}, process.env, process.cwd(), { lenient: true }))
  const style = styleFor(process.stdout)
  return new TranscriptRenderer(process.stdout, style, {
    turnCost: (events) => costFigure(events, pricing),
    ...(style.color && flags.raw !== true ? { markdown: terminalMarkdown() } : {}),
    describeReason: (reason) => (cancelledElsewhere(reason, cancelledHere()) ? CANCELLED_ELSEWHERE : describeReason(reason)),
  })
}
