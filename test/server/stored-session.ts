import { createHarness, invariantPlugin, JsonlStore, permissionPlugin, retryPlugin, scriptedAdapter } from '../../src/index.js'
import { serveTools } from './serve-fixture.js'
import { cutOffMidTurn } from '../support/cut-off-turn.js'

/**
 * Writes a session into the JSONL folder `dir` through a harness of its own (so the server reads it as a
 * stored session it does not run), with what the conversation view must show: turn 1 has reasoning, an answer,
 * an allowed tool call with its result, a tool call denied by a rule, and a rate-limited request that was
 * retried; turn 2 fails with `AUTH` (HTTP 401). Returns the session's id.
 */
export async function writeStoredSession(dir: string): Promise<string> {
  const model = scriptedAdapter({
    script: [
      { reasoning: ['The user wants a check. ', 'I will echo first.'], text: 'Let me check.', toolCalls: [{ name: 'echo', arguments: { text: 'ping' } }, { name: 'deploy', arguments: { target: 'production' } }], usage: { inputTokens: 40, outputTokens: 12 } },
      { error: { code: 'RATE_LIMIT', message: 'too many requests', status: 429 } },
      { text: 'All checked: echo answered, and deploying was refused.', usage: { inputTokens: 60, outputTokens: 9 } },
      { error: { code: 'AUTH', message: 'invalid api key', status: 401 } },
    ],
    models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } },
  })
  const harness = createHarness({
    store: new JsonlStore({ dir }),
    adapters: [model],
    tools: serveTools(),
    plugins: [invariantPlugin(), permissionPlugin({ rules: { allow: ['echo'], deny: ['deploy'] } }), retryPlugin({ baseDelayMs: 5, maxDelayMs: 5 })],
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
  agent.followup('check the service')
  await agent.whenIdle()
  agent.followup('and again')
  await agent.whenIdle()
  const id = agent.session.id
  await harness.close()
  return id
}

/**
 * Writes two sessions cut off mid-turn, as a crash leaves them: `orphaned` ends inside its turn (its process
 * "died" while a tool ran and nobody has opened it since); `interrupted` was then opened by a later process,
 * whose crash repair closed the turn `interrupted` (without a continuation turn).
 */
export async function writeCutOffSessions(dir: string): Promise<{ orphaned: string; interrupted: string }> {
  const cut = (): Promise<string> => cutOffMidTurn(new JsonlStore({ dir }))
  const orphaned = await cut()
  const interrupted = await cut()
  const later = createHarness({ store: new JsonlStore({ dir }), adapters: [scriptedAdapter({ script: [] })] })
  await later.resumeAgent(interrupted, { interrupted: 'close' })
  await later.close()
  return { orphaned, interrupted }
}

/**
 * Writes a session cut off mid-turn (as {@link writeCutOffSessions}) and resumes it with `quarantineAfter: 1`,
 * so the resume quarantines it (`session/quarantined`, the reason naming the interrupted turn). Its model
 * answers `done after the crash` when a forced resume continues the work.
 */
export async function writeQuarantinedSession(dir: string): Promise<string> {
  const { orphaned } = await writeCutOffSessions(dir)
  const later = createHarness({ store: new JsonlStore({ dir }), adapters: [scriptedAdapter({ script: [] })] })
  await later.resumeAgent(orphaned, { quarantineAfter: 1 }).then(
    () => {
      throw new Error('expected the resume to quarantine the session')
    },
    (error: unknown) => {
      if ((error as { code?: string }).code !== 'SESSION_QUARANTINED') throw error
    },
  )
  await later.close()
  return orphaned
}
