import { EXIT } from '../cli-error.js'
import { cliStore } from '../cli-harness.js'
import { resolveConfig, type EffectiveConfig } from '../config.js'
import { providerAdapter } from '../providers.js'
import { replaySession, type ModelFacts } from '../../views/replay-session.js'
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

/** `ledgerloop replay ID`: exit 0 when every rebuilt request matches the original, else 1 listing differences. */
export async function replayCommand(id: string): Promise<number> {
  const config = resolveConfig()
  const store = cliStore(config)
  let events
  try {
    events = (await store.read(id)).events
  } finally {
    await store.close()
  }
  const report = await replaySession(events, modelFactsFrom(config))
  const style = styleFor(process.stdout)
  if (report.problems.length === 0) {
    process.stdout.write(`${style.green('ok')} ${id}: replayed ${report.compared} request${report.compared === 1 ? '' : 's'}; each matches the original\n`)
    return EXIT.ok
  }
  process.stdout.write(`${style.red(`${report.problems.length} difference${report.problems.length === 1 ? '' : 's'}`)} replaying ${id} (${report.compared} requests compared):\n`)
  for (const problem of report.problems) process.stdout.write(`  ${problem}\n`)
  return EXIT.failed
}
