import { z } from 'zod'
import { createHarness, defineTool, invariantPlugin, scriptedAdapter, type HarnessOptions, type ScriptStep, type SessionEvent } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'

/** A harness with the invariant plugin (unless `invariant: false`) and a scripted model, plus helpers to read the log. */
export async function loopFixture(
  script: ScriptStep[] | ((request: GenerateOptions, index: number) => ScriptStep),
  options: Omit<HarnessOptions, 'adapters'> & { maxTokens?: number; invariant?: boolean } = {},
) {
  const model = scriptedAdapter({ script, models: { m1: { contextWindow: 1000, defaultMaxTokens: 100 } } })
  const errors: unknown[] = []
  const harness = createHarness({
    ...options,
    adapters: [model],
    plugins: [...(options.invariant === false ? [] : [invariantPlugin()]), ...(options.plugins ?? [])],
  })
  harness.hooks.on('agent/error', ({ error }) => {
    errors.push(error)
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}) })
  return {
    harness,
    agent,
    model,
    errors,
    /** Event types in log order. */
    types: (): string[] => agent.session.events.map((e) => e.type),
    /** Boundary events only (turns, steps, messages, tools), for order assertions. */
    boundaries: (): string[] =>
      agent.session.events.filter((e) => !['assistant/chunk', 'request/header', 'request/context', 'agent/inbox/spliced'].includes(e.type)).map((e) => e.type),
    turnEnds: (): unknown[] => agent.session.events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason),
    ofType: (type: string): SessionEvent[] => agent.session.events.filter((e) => e.type === type),
  }
}

/** A tool that records its calls. */
export function echoTool(calls: unknown[] = [], extra: Partial<{ concurrencySafe: boolean; concludesTurn: boolean }> = {}) {
  return defineTool({
    name: 'echo',
    description: 'Echoes its text',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => {
      calls.push(text)
      return `echo: ${text}`
    },
    ...extra,
  })
}
