import type { Command } from 'commander'
import { forkStoredSession } from '../../app/fork-session.js'
import { EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { addStoreOption, nonNegativeInteger } from './agent-options.js'

/** `ledgerloop fork ID [--at SEQ]`: prints the child's id (and nothing else, for `$(ledgerloop fork …)`). */
export async function forkCommand(ref: string, flags: { at?: number; store?: string }): Promise<number> {
  const { spec, store, id } = await openForReading(flags.store, ref)
  const child = await forkStoredSession(spec, store, id, flags.at !== undefined ? { at: flags.at } : {})
  process.stdout.write(`${child}\n`)
  return EXIT.ok
}

/** Registers `fork`. */
export function registerFork(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('fork').description('copy a session up to a point into a new session; prints the new id'))
    .argument('<id>', 'session id (a unique prefix is enough)')
    .option('--at <seq>', 'seq of the last event to keep (default: the end)', nonNegativeInteger)
    .action(async (id: string, flags: { at?: number; store?: string }) => {
      exit.code = await forkCommand(id, flags)
    })
}
