import type { Command } from 'commander'
import { createHarness } from '../../harness/harness.js'
import { EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { refuseLiveSession } from '../../app/store-spec.js'
import { addStoreOption, nonNegativeInteger } from './agent-options.js'

/** `ledgerloop fork ID [--at SEQ]`: prints the child's id (and nothing else, for `$(ledgerloop fork …)`). */
export async function forkCommand(ref: string, flags: { at?: number; store?: string }): Promise<number> {
  const { spec, store, id } = await openForReading(flags.store, ref)
  const harness = createHarness({ store })
  try {
    // A session another process is writing has an open turn that is work in progress, not a fork point.
    refuseLiveSession(spec, id, 'fork')
    const child = await harness.forkSession(id, flags.at !== undefined ? { at: flags.at } : {})
    process.stdout.write(`${child}\n`)
    return EXIT.ok
  } finally {
    await harness.close()
  }
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
