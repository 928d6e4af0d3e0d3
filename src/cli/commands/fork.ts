import { createHarness } from '../../agent/harness.js'
import { EXIT } from '../cli-error.js'
import { cliStore } from '../cli-harness.js'
import { resolveConfig } from '../config.js'

/** `ledgerloop fork ID [--at SEQ]`: prints the child's id (and nothing else, for `$(ledgerloop fork …)`). */
export async function forkCommand(id: string, flags: { at?: number }): Promise<number> {
  const harness = createHarness({ store: cliStore(resolveConfig()) })
  try {
    const child = await harness.forkSession(id, flags.at !== undefined ? { at: flags.at } : {})
    process.stdout.write(`${child}\n`)
    return EXIT.ok
  } finally {
    await harness.close()
  }
}
