import { EXIT } from '../cli-error.js'
import { resolveConfig, type EffectiveConfig } from '../config.js'

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
    configFile: `${config.configFile}${config.configFileExists ? '' : ' (not present)'}`,
    provider: config.provider,
    model: config.model ?? null,
    baseURL: config.baseURL ?? null,
    root: config.root,
    shell: config.shell,
    maxSteps: config.maxSteps,
    maxTokens: config.maxTokens ?? null,
    permissions: config.permissions,
    retry: config.retry,
    providers,
    sources: config.sources,
  }
}

/** `ledgerloop config [--json]`. */
export async function configCommand(flags: { json?: boolean }): Promise<number> {
  const shown = describeConfig(resolveConfig())
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(shown, null, 2)}\n`)
    return EXIT.ok
  }
  const sources = shown.sources as Record<string, string>
  const lines: string[] = []
  for (const [key, value] of Object.entries(shown)) {
    if (key === 'sources' || key === 'providers' || key === 'permissions' || key === 'retry') continue
    lines.push(`${key.padEnd(11)} ${value === null ? '-' : String(value)}${sources[key] !== undefined ? `   (${sources[key]})` : ''}`)
  }
  lines.push(`permissions ${JSON.stringify(shown.permissions)}`)
  lines.push(`retry       ${JSON.stringify(shown.retry)}`)
  lines.push('providers')
  for (const [name, spec] of Object.entries(shown.providers as Record<string, Record<string, unknown>>)) {
    const parts = Object.entries(spec).filter(([k]) => k !== 'models').map(([k, v]) => `${k}=${String(v)}`)
    lines.push(`  ${name.padEnd(10)} ${parts.join('  ')}`)
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  return EXIT.ok
}
