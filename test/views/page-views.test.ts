import { describe, expect, it } from 'vitest'
import { createHarness, retryPlugin, scriptedAdapter, type ScriptStep, type SessionEvent } from '../../src/index.js'
import { buildConversation } from '../../src/views/conversation.js'
import { editChangeDiff, fileChangeDiff } from '../../src/views/file-change.js'
import { sessionActivity } from '../../src/views/session-activity.js'
import { echoTool } from '../support/loop-fixture.js'

const MODELS = { m: { contextWindow: 10_000, defaultMaxTokens: 100 } }

async function record(script: ScriptStep[], prompts: string[]): Promise<SessionEvent[]> {
  const harness = createHarness({ adapters: [scriptedAdapter({ script, models: MODELS })], tools: [echoTool()], plugins: [retryPlugin({ baseDelayMs: 1, maxDelayMs: 1 })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  for (const prompt of prompts) {
    agent.followup(prompt)
    await agent.whenIdle()
  }
  const events = [...agent.session.events]
  await harness.close()
  return events
}

describe('views for the page: the conversation, the activity line, file changes', () => {
  it('folds turns into prompts, answers with reasoning, tool calls with results, retries and the turn error', async () => {
    const events = await record(
      [
        { reasoning: 'think', text: 'calling', toolCalls: [{ name: 'echo', arguments: { text: 'x' } }] },
        { error: { code: 'SERVER', message: 'overloaded', status: 503 } },
        { text: 'done' },
        { error: { code: 'CONTEXT_WINDOW_EXCEEDED', message: 'too long' } },
      ],
      ['first', 'second'],
    )
    const { turns } = buildConversation(events)
    expect(turns.map((t) => t.status)).toEqual(['completed', 'error'])
    expect(turns[0]?.items.map((i) => i.kind)).toEqual(['prompt', 'answer', 'tool', 'retry', 'answer'])
    expect(turns[0]?.items[1]).toMatchObject({ kind: 'answer', text: 'calling', reasoning: 'think' })
    expect(turns[0]?.items[2]).toMatchObject({ kind: 'tool', name: 'echo', status: 'ok', result: 'echo: x' })
    expect(turns[0]?.items[3]).toMatchObject({ kind: 'retry', code: 'SERVER', message: 'overloaded', attempt: 1 })
    expect(turns[1]?.error).toMatchObject({ code: 'CONTEXT_WINDOW_EXCEEDED', message: 'too long' })
    expect(turns[1]?.error?.hint).toContain('compact')
    // A view of the log: every prefix folds without throwing, and the open turn reads as open.
    const open = buildConversation(events.slice(0, turns[1]?.startSeq as number + 3))
    expect(open.turns.at(-1)?.status).toBe('open')
  })

  it('says what a running turn waits for and why a turn stopped', async () => {
    const events = await record([{ toolCalls: [{ name: 'echo', arguments: { text: 'y' } }] }, { text: 'ok' }], ['go'])
    const callAt = events.findIndex((e) => e.type === 'tool/call')
    expect(sessionActivity(events.slice(0, callAt + 1), 'running')).toMatchObject({ kind: 'tool', summary: expect.stringMatching(/^running echo/) })
    expect(sessionActivity(events.slice(0, callAt + 1), 'awaiting-approval')?.summary).toMatch(/^waiting for your approval of echo/)
    expect(sessionActivity(events.slice(0, callAt + 1), 'stored')?.kind).toBe('orphaned')
    const stepTwo = events.findLastIndex((e) => e.type === 'step/start')
    expect(sessionActivity(events.slice(0, stepTwo + 1), 'running')?.summary).toBe('waiting for the model (turn 1, step 2)')
    expect(sessionActivity(events, 'idle')).toBeUndefined()
  })

  it('diffs a write against the current text and an edit against the file it edits', () => {
    const write = fileChangeDiff('a.txt', 'one\ntwo\n', 'one\n2\n')
    expect(write).toMatchObject({ file: 'existing', added: 1, removed: 1 })
    expect(write.hunks[0]?.lines).toEqual([' one', '-two', '+2'])
    expect(fileChangeDiff('b.txt', undefined, 'new\n')).toMatchObject({ file: 'new', added: 1, removed: 0 })
    expect(editChangeDiff('a.txt', 'a\nb\nc\n', 'b', 'B').hunks[0]?.lines).toEqual([' a', '-b', '+B', ' c'])
    expect(editChangeDiff('a.txt', 'b\nb\n', 'b', 'B')).toMatchObject({ wouldFail: true, note: expect.stringContaining('more than once') })
    expect(editChangeDiff('a.txt', 'a\n', 'zzz', 'B')).toMatchObject({ wouldFail: true, note: expect.stringContaining('does not occur') })
    expect(editChangeDiff('a.txt', undefined, 'x', 'y')).toMatchObject({ file: 'unknown' })
  })
})
