import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, type SessionStore } from '../../src/index.js'

/**
 * Starts a turn whose only tool call never returns, then closes `store` under it, as a process that dies
 * while a tool runs leaves its session: the log ends inside the turn, the call logged and unanswered.
 * Returns the session's id (`sessionId` when given).
 */
export async function cutOffMidTurn(store: SessionStore, sessionId?: string): Promise<string> {
  let started: () => void = () => {}
  const running = new Promise<void>((resolve) => (started = resolve))
  const stuck = defineTool({
    name: 'stuck',
    description: 'Never returns',
    parameters: z.object({}),
    execute: () => {
      started()
      return new Promise<string>(() => {})
    },
  })
  const model = scriptedAdapter({ script: [{ toolCalls: [{ name: 'stuck', arguments: {} }] }], models: { m1: { contextWindow: 100_000 } } })
  const crashed = createHarness({ store, adapters: [model], tools: [stuck], onListenerError: () => {} })
  const agent = await crashed.createAgent({ provider: 'scripted', model: 'm1', ...(sessionId === undefined ? {} : { sessionId }) })
  agent.followup('run the stuck tool')
  await running
  await store.close()
  return agent.session.id
}
