// The original harness's reopen of a long session (issue 30, target 1, side by side with ledgerloop's
// resumeAgent in bench/micro/reopen.ts). Runs on Node 22 (dsh needs >= 22.19).
//
// Fixture (once per shape, under --cache): `--turns` turns written by dsh's own agent loop through its published
// JSONL persistence (`@deepseek-ai/dsh-session-persistence-jsonl`, default settings: zstd frames, packed chunk
// rows), each turn one step streaming `--reasoning` reasoning and `--text` text deltas from a scripted adapter.
// Then ONE measurement in a fresh process: the same plugins composed as when writing (untimed, as ledgerloop's
// createHarness is untimed), and the clock around `ctx.agents.resume({ resumeSessionId })`, the API's way to
// load a persisted session and put an agent on it. Prints `{ms, events, rssMiB}` as its last line.
//
//   node22 tsx drivers/dsh-reopen.ts [--turns 200] [--text 500] [--reasoning 125] [--cache /tmp/ll-reopen/dsh]
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Context } from '@deepseek-ai/cordis'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import LlmRuntime, { createUserMessage, LlmAdapter } from '@deepseek-ai/dsh-llm'
import type { GenerateOptions, StreamChunk } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime from '@deepseek-ai/dsh-tools'

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '200' },
    text: { type: 'string', default: '500' },
    reasoning: { type: 'string', default: '125' },
    cache: { type: 'string', default: '/tmp/ll-reopen/dsh' },
    child: { type: 'boolean', default: false },
  },
})
const turns = Number(values.turns)
const textDeltas = Number(values.text)
const reasoningDeltas = Number(values.reasoning)
const dir = join(values.cache, `${turns}x${textDeltas}+${reasoningDeltas}`)
const root = join(dir, 'sessions')
const marker = join(dir, 'done.json')
const SESSION = SessionId('big')

/** Each request: one reasoning block of `reasoningDeltas` deltas, then one text block of `textDeltas`. */
class ShapeAdapter extends LlmAdapter {
  async *stream(_options: GenerateOptions): AsyncIterable<StreamChunk> {
    const reasoning = Array.from({ length: reasoningDeltas }, (_, i) => `thinking ${i} `)
    const text = Array.from({ length: textDeltas }, (_, i) => `word${i} `)
    yield { type: 'block-start', index: 0, blockType: 'reasoning' }
    for (const piece of reasoning) yield { type: 'reasoning-delta', index: 0, text: piece }
    yield { type: 'block-end', index: 0, block: { type: 'reasoning', text: reasoning.join('') } }
    yield { type: 'block-start', index: 1, blockType: 'text' }
    for (const piece of text) yield { type: 'text-delta', index: 1, text: piece }
    yield { type: 'block-end', index: 1, block: { type: 'text', text: text.join('') } }
    yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } }
    yield { type: 'finish', reason: { kind: 'stop' } }
  }
}

/** The composition of bench/node22/drivers/dsh.ts's 'jsonl' variant, on this fixture's root. */
async function compose(): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlSessionPersistence, { root })
  await ctx.plugin(SystemPrompt, { persona: 'You are a benchmark assistant.' })
  await ctx.plugin(ToolRuntime)
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  ctx.llm.registerAdapter(['scripted'], new ShapeAdapter())
  return ctx
}

async function record(): Promise<void> {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  console.error(`dsh: recording ${turns} turns under ${dir} …`)
  const ctx = await compose()
  const handle = await ctx.agents.create({ sessionId: SESSION, agentOptions: { provider: 'scripted', model: 'bench' } })
  const agent = handle.agent
  for (let t = 0; t < turns; t++) {
    await new Promise<void>((resolve) => {
      const dispose = ctx.on('agent/status', (payload) => {
        if (payload.agent === agent && payload.status === 'idle') {
          dispose()
          resolve()
        }
      })
      agent.followup(createUserMessage({ content: [{ type: 'text', text: `prompt ${t}` }], source: { kind: 'user' } }))
    })
  }
  const events = agent.session.events.length
  // The durability checkpoint: the persistence's write-behind queue reaches the file before the agent goes.
  if (!(await ctx.sessions.flush(agent.session))) throw new Error('dsh: no persistence took part in the flush')
  await handle.dispose()
  writeFileSync(marker, JSON.stringify({ events }))
}

async function measure(): Promise<void> {
  const ctx = await compose()
  const t0 = performance.now()
  const handle = await ctx.agents.resume({ resumeSessionId: SESSION, agentOptions: { provider: 'scripted', model: 'bench' } })
  const ms = performance.now() - t0
  const rssMiB = process.memoryUsage().rss / 1048576
  const events = handle.agent.session.events.length
  await handle.dispose()
  console.log(JSON.stringify({ ms, events, rssMiB }))
}

if (values.child) {
  await measure()
} else {
  if (!existsSync(marker)) await record()
  const recorded = (JSON.parse(readFileSync(marker, 'utf8')) as { events: number }).events
  // The reopen always runs in a process of its own: after a recording this one is warm.
  const args = [...process.execArgv, process.argv[1] as string, '--child', '--turns', String(turns), '--text', String(textDeltas), '--reasoning', String(reasoningDeltas), '--cache', values.cache]
  const out = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 24 })
  const result = JSON.parse(out.trim().split('\n').pop() as string) as { ms: number; events: number; rssMiB: number }
  // The resumed session holds the recorded events and what resuming appends (more than that would be a misread).
  if (result.events < recorded) console.error(`dsh: reopened ${result.events} events, recorded ${recorded}`)
  console.log(JSON.stringify(result))
}
