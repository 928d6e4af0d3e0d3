import type { Command } from 'commander'
import { EXIT } from '../cli-error.js'
import type { EffectiveConfig } from '../../app/config.js'
import { openForReading } from '../read-only-store.js'
import { addStoreOption } from './agent-options.js'
import { providerAdapter } from '../../app/providers.js'
import { replaySession, type ModelFacts } from '../../app/replay-session.js'
import { styleFor } from '../style.js'

/** Model facts of the routes the config knows (adapters are built without keys: none is ever called). */
function modelFactsFrom(config: EffectiveConfig): ModelFacts {
  return (provider) => {
    const spec = config.providers[provider]
    if (spec === undefined) return undefined
    try {
      const adapter = providerAdapter(provider, spec, undefined, {})
      return adapter.resolveModel === undefined ? undefined : (model) => adapter.resolveModel?.(model)
    } catch {
      return undefined
    }
  }
}

/** `ledgerloop replay ID [--json]`: exit 0 when every rebuilt request matches the original, else 1 listing differences. */
export async function replayCommand(ref: string, flags: { json?: boolean; store?: string } = {}): Promise<number> {
  const { config, store, id } = await openForReading(flags.store, ref)
  let events
  try {
    events = (await store.read(id)).events
  } finally {
    await store.close()
  }
  const report = await replaySession(events, modelFactsFrom(config))
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ id, ok: report.problems.length === 0, compared: report.compared, followed: report.followed, problems: report.problems }, null, 2)}\n`)
    return report.problems.length === 0 ? EXIT.ok : EXIT.failed
  }
  const style = styleFor(process.stdout)
  if (report.followed.length > 0) {
    const turns = report.followed.join(', ')
    process.stdout.write(style.dim(`turn${report.followed.length === 1 ? '' : 's'} ${turns} taken from the log (closed by crash repair, or continuing an interrupted turn: no fresh loop writes ${report.followed.length === 1 ? 'it' : 'them'}); the replay went on from there\n`))
  }
  if (report.problems.length === 0) {
    process.stdout.write(`${style.green('ok')} ${id}: replayed ${report.compared} request${report.compared === 1 ? '' : 's'}; each matches the original\n`)
    return EXIT.ok
  }
  process.stdout.write(`${style.red(`${report.problems.length} difference${report.problems.length === 1 ? '' : 's'}`)} replaying ${id} (${report.compared} requests compared):\n`)
  for (const problem of report.problems) process.stdout.write(`  ${problem}\n`)
  return EXIT.failed
}

/** Registers `replay`. */
export function registerReplay(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('replay').description('re-run the recorded model outputs through a fresh loop and compare every request'))
    .argument('<id>', 'session id (a unique prefix is enough)')
    .option('--json', '{id, ok, compared, followed, problems}')
    .action(async (id: string, flags: { json?: boolean; store?: string }) => {
      exit.code = await replayCommand(id, flags)
    })
}
