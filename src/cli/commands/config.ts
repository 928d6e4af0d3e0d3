import type { Command } from 'commander'
import { EXIT } from '../cli-error.js'
import { deadEndpointMs, resolveConfig, worstCaseRequestMs, type EffectiveConfig } from '../../app/config.js'
import { describeStoreSpec, parseStoreSpec } from '../../app/store-spec.js'
import { formatDuration } from '../../views/turn-outcome.js'
import { addStoreOption } from './agent-options.js'

/** The effective configuration as shown to people: key variables are named, their values never shown. */
export function describeConfig(config: EffectiveConfig, env: NodeJS.ProcessEnv = process.env): Record<string, unknown> {
  const providers = Object.fromEntries(
    Object.entries(config.providers).map(([name, spec]) => {
      const keySet = spec.apiKeyEnv !== undefined && env[spec.apiKeyEnv] !== undefined && env[spec.apiKeyEnv] !== ''
      return [
        name,
        {
          type: spec.type,
          ...(spec.baseURL !== undefined ? { baseURL: spec.baseURL } : {}),
          ...(spec.apiKeyEnv !== undefined ? { apiKeyEnv: spec.apiKeyEnv, apiKey: keySet ? '**** (set)' : spec.keyRequired ? 'not set (required)' : 'not set (optional)' } : {}),
          ...(spec.defaultModel !== undefined ? { defaultModel: spec.defaultModel } : {}),
          ...(spec.models !== undefined ? { models: spec.models } : {}),
        },
      ]
    }),
  )
  return {
    home: config.home,
    configFile: config.configFile,
    configFileStatus: config.configFileExists ? 'present' : 'not present',
    provider: config.provider,
    model: config.model ?? null,
    baseURL: config.baseURL ?? null,
    store: describeStoreSpec(parseStoreSpec(config.store)),
    root: config.root,
    shell: config.shell,
    maxSteps: config.maxSteps,
    maxTokens: config.maxTokens ?? null,
    maxOutputTokens: config.maxOutputTokens ?? null,
    reasoningEffort: config.reasoningEffort ?? null,
    idleTimeoutMs: config.idleTimeoutMs,
    responseTimeoutMs: config.responseTimeoutMs,
    retry: config.retry,
    worstCaseRequestMs: worstCaseRequestMs(config),
    deadEndpointMs: deadEndpointMs(config),
    // Header values may be credentials of a proxy: names only.
    headers: Object.keys(config.headers),
    system: config.system ?? null,
    projectFile: config.projectFile,
    permissions: config.permissions,
    pricing: config.pricing,
    providers,
    sources: config.sources,
  }
}

/** `ledgerloop config [--json]`. */
export async function configCommand(flags: { json?: boolean; store?: string }): Promise<number> {
  const config = resolveConfig(flags.store !== undefined ? { store: flags.store } : {})
  const shown = describeConfig(config)
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`)
    return EXIT.ok
  }
  const sources = shown.sources as Record<string, string>
  const lines: string[] = []
  const complex = new Set(['sources', 'providers', 'permissions', 'retry', 'pricing', 'headers', 'configFileStatus', 'worstCaseRequestMs', 'deadEndpointMs'])
  for (const [key, value] of Object.entries(shown)) {
    if (complex.has(key)) continue
    const shownValue = key === 'configFile' ? `${String(value)} (${String(shown.configFileStatus)})` : value === null ? '-' : String(value)
    lines.push(`${key.padEnd(15)} ${shownValue}${sources[key] !== undefined ? `   (${sources[key]})` : ''}`)
  }
  lines.push(`${'retry'.padEnd(15)} ${JSON.stringify(shown.retry)}   (${sources.retry ?? 'default'})`)
  lines.push(`${'worst case'.padEnd(15)} a stalled server is given up after at most ${formatDuration(worstCaseRequestMs(config))} per request (attempts × idle timeout + retry waits)`)
  lines.push(`${'dead server'.padEnd(15)} one that never answers fails a request within ${formatDuration(deadEndpointMs(config))} (attempts × response timeout + retry waits)`)
  lines.push(`${'headers'.padEnd(15)} ${JSON.stringify(shown.headers)}`)
  lines.push(`${'permissions'.padEnd(15)} ${JSON.stringify(shown.permissions)}`)
  lines.push(`${'pricing'.padEnd(15)} ${JSON.stringify(shown.pricing)}`)
  lines.push('providers')
  for (const [name, spec] of Object.entries(shown.providers as Record<string, Record<string, unknown>>)) {
    const parts = Object.entries(spec).filter(([k]) => k !== 'models').map(([k, v]) => `${k}=${String(v)}`)
    lines.push(`  ${name.padEnd(10)} ${parts.join('  ')}`)
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  return EXIT.ok
}

/** Registers `config`. */
export function registerConfig(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('config').description('show the effective configuration (secrets masked) and where each value came from'))
    .option('--json', 'as JSON')
    .action(async (flags: { json?: boolean; store?: string }) => {
      exit.code = await configCommand(flags)
    })
}
