// Records scripted sessions for the resume-checkpoint tests of both stores (resume-checkpoint.test.ts for JSONL,
// sqlite-resume-checkpoint.test.ts and the process it kills, sqlite-resume-kill-child.ts): turn by turn, keeping
// the checkpoint as it stood after each turn.
import Database from 'better-sqlite3'
import fc from 'fast-check'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, type ScriptStep, type SessionStore } from '../../src/index.js'
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

/** Random turns for the property tests. */
export const turnSpec = fc.record({ text: fc.integer({ min: 0, max: 40 }), reasoning: fc.integer({ min: 0, max: 6 }), tool: fc.boolean(), steer: fc.boolean() })

/**
 * Records `turns` into `store` (a new session, or with `resume` the existing one goes on).
 * @param keep - what to keep of the checkpoint after turn `i` is idle (a copy of the file, the row's text)
 * @param afterTurn - called after each turn is kept (the kill child dies there)
 * @returns what `keep` returned after each turn
 */
export async function recordTurns(store: SessionStore, turns: readonly TurnSpec[], keep: (turn: number) => string, resume = false, afterTurn?: (turn: number) => void): Promise<string[]> {
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
  const harness = createHarness({ store, adapters: [model], tools: [ECHO] })
  const agent = resume ? await harness.resumeAgent(ID, { interrupted: 'close' }) : await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: ID })
  const kept: string[] = []
  for (const [i, spec] of turns.entries()) {
    turn = i
    agent.followup(`prompt ${i}`)
    if (spec.steer) agent.steer(`steer ${i}`)
    await agent.whenIdle()
    kept.push(keep(i))
    afterTurn?.(i)
  }
  await agent.dispose()
  await harness.close()
  return kept
}

/**
 * Records `turns` into the SQLite database at `path` (a new session, or with `resume` the existing one goes on).
 * @param afterTurn - called after each turn is idle (the kill child dies there)
 * @returns the session's checkpoint row after each turn, as stored
 */
export async function recordSqlite(path: string, turns: readonly TurnSpec[], resume = false, afterTurn?: (turn: number) => void): Promise<string[]> {
  // Opened at the first turn's end: the store creates the database.
  let reader: Database.Database | undefined
  const keep = (): string => {
    reader ??= new Database(path, { readonly: true })
    return reader.prepare('SELECT checkpoint FROM resume_checkpoints WHERE session_id = ?').pluck().get(ID) as string
  }
  try {
    return await recordTurns(new SqliteStore({ path }), turns, keep, resume, afterTurn)
  } finally {
    reader?.close()
  }
}
