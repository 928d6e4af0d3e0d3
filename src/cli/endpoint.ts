// Where a run's requests go, as people read it in the opening lines and the waiting spinner.
import { ANTHROPIC_BASE_URL } from '../llm/adapters/anthropic.js'
import { DEEPSEEK_BASE_URL } from '../llm/adapters/deepseek.js'
import type { PreparedRun } from './commands/agent-options.js'

/**
 * The base URL a run's requests go to: `--base-url` (or the session's remembered one), else the provider's
 * configured one, else the adapter's default. Undefined for a scripted model, which calls nothing.
 */
export function endpointOf(prepared: Pick<PreparedRun, 'route' | 'baseURL' | 'config'>): string | undefined {
  if (prepared.route.scriptFile !== undefined) return undefined
  if (prepared.baseURL !== undefined) return prepared.baseURL
  const spec = prepared.config.providers[prepared.route.provider]
  if (spec?.baseURL !== undefined) return spec.baseURL
  return spec?.type === 'deepseek' ? DEEPSEEK_BASE_URL : spec?.type === 'anthropic' ? ANTHROPIC_BASE_URL : undefined
}

/** `api.deepseek.com`, `127.0.0.1:8000`: the host part of an endpoint, for a line that must stay short. */
export function endpointHost(endpoint: string | undefined): string | undefined {
  if (endpoint === undefined) return undefined
  try {
    return new URL(endpoint).host
  } catch {
    return undefined
  }
}
