// Records scripted sessions into a SqliteStore for the resume-checkpoint tests (sqlite-resume-checkpoint.test.ts,
// and the process it kills, sqlite-resume-kill-child.ts): turn by turn, keeping the checkpoint row after each.
import Database from 'better-sqlite3'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { SqliteStore } from '../../src/store/sqlite.js'

/** One recorded turn: its deltas, whether it calls a tool first, whether steering is sent while it runs. */
export interface TurnSpec {
  readonly text: number
  readonly reasoning: number
  readonly tool: boolean
  /** Steering sent while the turn runs (joins its next step, or waits in the inbox). */
  readonly steer: boolean
}

/** The recorded session's id. */
export const ID = 'cp'

/** The tool the recorded turns call. */
export const ECHO = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ what: z.string() }), replay: 'safe', execute: ({ what }) => `echo ${what}` })

/**
 * Records `turns` into the database at `path` (a new session, or with `resume` the existing one goes on).
 * @param afterTurn - called after each turn is idle (the kill child dies there)
 * @returns the session's checkpoint row after each turn, as stored
 */
export async function recordSqlite(path: string, turns: readonly TurnSpec[], resume = false, afterTurn?: (turn: number) => void): Promise<string[]> {
  let turn = -1
  const model = scriptedAdapter({
    script: (request: GenerateOptions): ScriptStep => {
      const spec = turns[Math.max(0, turn)] as TurnSpec
      const last = request.messages[request.messages.length - 1]
      const answered = last?.role === 'user' && last.content[0]?.type === 'tool-result'
      if (spec.tool && !answered) return { reasoning: ['calling'], toolCalls: [{ id: `call-${turn}`, name: 'echo', arguments: { what: `w${turn}` } }] }
      return {
        reasoning: Array.from({ length: spec.reasoning }, (_, i) => `r${i} `),
        text: Array.from({ length: spec.text }, (_, i) => `t${turn}.${i} `),
      }
    },
    models: { m1: { contextWindow: 1_000_000 } },
  })
  const harness = createHarness({ store: new SqliteStore({ path }), adapters: [model], tools: [ECHO] })
  const agent = resume ? await harness.resumeAgent(ID, { interrupted: 'close' }) : await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: ID })
  const reader = new Database(path, { readonly: true })
  const copies: string[] = []
  try {
    for (const [i, spec] of turns.entries()) {
      turn = i
      agent.followup(`prompt ${i}`)
      if (spec.steer) agent.steer(`steer ${i}`)
      await agent.whenIdle()
      copies.push(reader.prepare('SELECT checkpoint FROM resume_checkpoints WHERE session_id = ?').pluck().get(ID) as string)
      afterTurn?.(i)
    }
  } finally {
    reader.close()
  }
  await agent.dispose()
  await harness.close()
  return copies
}
