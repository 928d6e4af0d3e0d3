import type { Command } from 'commander'
import { resolveConfig } from '../../app/config.js'
import { CliError, EXIT } from '../cli-error.js'
import { cliPricing, cliStore } from '../cli-harness.js'
import { pickSession, RESUME_PICKER_SIZE } from '../session-picker.js'
import { styleFor } from '../style.js'
import { chatCommand } from './chat.js'
import { addAgentOptions, ALL_AGENT_OPTION_NAMES, configFlagsOf, type AgentFlags, type AgentOptionName } from './agent-options.js'
import { listSessionsPage } from './sessions.js'
import { isSubagentSession } from '../../views/child-sessions.js'

/** `resume` picks the session, so the options that pick one (or serve a worker) are not its own. */
const RESUME_OPTION_NAMES: readonly AgentOptionName[] = ALL_AGENT_OPTION_NAMES.filter((name) => !['session', 'continue', 'attach', 'force'].includes(name))

/**
 * `ledgerloop resume`: the recent sessions (title, age, turns, last reason, cost) in a list picked with the
 * arrow keys; the chosen one continues as `chat --session ID` would. Needs a terminal.
 */
export async function resumeCommand(flags: AgentFlags): Promise<number> {
  if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) {
    throw new CliError('resume picks a session on a terminal; elsewhere continue one by id: ledgerloop chat --session ID (ledgerloop sessions lists them)', EXIT.usage)
  }
  const picked = await pickRecentSession(flags)
  if (picked === undefined) return EXIT.ok
  return chatCommand({ ...flags, session: picked })
}

/** Shows the picker over the store's recent root sessions; the chosen id, or undefined (none, or cancelled). */
export async function pickRecentSession(flags: Pick<AgentFlags, 'store'>): Promise<string | undefined> {
  const config = resolveConfig(configFlagsOf(flags), process.env, process.cwd(), { lenient: true })
  const style = styleFor(process.stdout)
  const store = await cliStore(config)
  let rows
  try {
    rows = (await listSessionsPage(store, cliPricing(config), { limit: RESUME_PICKER_SIZE, keep: (s) => !isSubagentSession(s) })).rows.filter((row) => row.problem === undefined)
  } finally {
    await store.close()
  }
  if (rows.length === 0) {
    process.stdout.write('no sessions to resume yet (ledgerloop chat starts one)\n')
    return undefined
  }
  process.stdout.write(style.bold('Resume which session?\n'))
  const row = await pickSession(rows, process.stdin, process.stdout, style)
  return row?.id
}

/** Registers `resume`. */
export function registerResume(program: Command, exit: { code: number }): void {
  addAgentOptions(program.command('resume').description('pick a recent session with the arrow keys and continue it in a chat'), RESUME_OPTION_NAMES)
    .addHelpText('after', '\nExamples:\n  ledgerloop resume\n  ledgerloop resume --store sqlite:./team.db')
    .action(async (flags: AgentFlags) => {
      exit.code = await resumeCommand(flags)
    })
}
