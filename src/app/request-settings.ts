// Owns the request settings a configuration applies to every model request (reasoning effort, output cap). It
// was a hook the CLI harness registered after creating the harness, which the server and the worker never got;
// as a plugin it travels with the composition (compose.ts) to every entry point.
import type { LedgerHooks } from '../loop/hook-types.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { EffectiveConfig } from './config.js'

/** Settings applied to every request; an absent field leaves the model's default. */
export interface RequestSettings {
  readonly reasoningEffort?: string
  /** The output token cap (`--max-output-tokens`, `maxOutputTokens`). */
  readonly maxTokens?: number
}

/** The request settings of a configuration. */
export function requestSettingsOf(config: Pick<EffectiveConfig, 'reasoningEffort' | 'maxOutputTokens'>): RequestSettings {
  return {
    ...(config.reasoningEffort !== undefined ? { reasoningEffort: config.reasoningEffort } : {}),
    ...(config.maxOutputTokens !== undefined ? { maxTokens: config.maxOutputTokens } : {}),
  }
}

/** A plugin that sets `settings` on every request the loop proposes (after the listeners behind it). */
export function requestSettingsPlugin(settings: RequestSettings): Plugin<HookRegistrar<LedgerHooks>> {
  return {
    name: 'ledgerloop/request-settings',
    setup(hooks) {
      return hooks.on('agent/request', async (_payload, next) => ({ ...(await next()), ...settings }))
    },
  }
}
