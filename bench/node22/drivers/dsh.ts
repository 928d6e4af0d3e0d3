// The original harness (DeepSeek Harness, dsh): its agent loop plugin on a
// cordis Context with the LLM, session, system-prompt, tool and agent services,
// a scripted LlmAdapter, and either the in-memory session store alone
// (variant 'memory') or with its JSONL persistence backend ('jsonl').
// Runs on Node 22 (dsh needs >= 22.19); resolved from bench/node22/node_modules.
import { Context } from '@deepseek-ai/cordis'
import AgentRegistry from '@deepseek-ai/dsh-agent'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import LlmRuntime, { CallId, createUserMessage, LlmAdapter } from '@deepseek-ai/dsh-llm'
import type { GenerateOptions, StreamChunk } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime, { defineTool } from '@deepseek-ai/dsh-tools'
import type { CreateDriver } from '../../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../../src/workload.ts'

/** The scripted provider: plays whichever workload is current. */
class ScriptedAdapter extends LlmAdapter {
  workload: Workload | undefined

  async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const workload = this.workload
    if (!workload) throw new Error('no workload')
    const plan = workload.beginStep(options.messages.length)
    yield { type: 'block-start', index: 0, blockType: 'text' }
    for (const text of plan.chunks) yield { type: 'text-delta', index: 0, text }
    yield { type: 'block-end', index: 0, block: { type: 'text', text: plan.chunks.join('') } }
    const call = plan.toolCall
    if (call) {
      const id = CallId(call.id)
      yield { type: 'block-start', index: 1, blockType: 'tool-call' }
      yield { type: 'tool-call-delta', index: 1, id, name: call.name, argumentsDelta: call.argumentsJson }
      yield { type: 'block-end', index: 1, block: { type: 'tool-call', id, name: call.name, arguments: call.argumentsJson } }
    }
    yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } }
    yield { type: 'finish', reason: { kind: call ? 'tool-calls' : 'stop' } }
  }
}

let sessions = 0

export const createDriver: CreateDriver = async (variant, options) => {
  if (variant !== 'memory' && variant !== 'jsonl') throw new Error(`unknown dsh variant '${variant}'`)
  const ctx = new Context()
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SessionStore)
  if (variant === 'jsonl') await ctx.plugin(JsonlSessionPersistence, { root: options.tmpDir })
  await ctx.plugin(SystemPrompt, { persona: SYSTEM_PROMPT })
  await ctx.plugin(ToolRuntime)
  await ctx.plugin(AgentRegistry)
  await ctx.plugin(AgentLoop, { agents: [] })
  const adapter = new ScriptedAdapter()
  ctx.llm.registerAdapter(['scripted'], adapter)
  ctx.tools.register(defineTool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: { step: { type: 'number' } },
    output: {
      schema: { type: 'string' },
      render: (_args, value) => [{ type: 'text', text: value }],
    },
    async execute(args) {
      if (!adapter.workload) throw new Error('no workload')
      return adapter.workload.runTool(args)
    },
  }))

  return {
    async prepare(workload) {
      adapter.workload = workload
      const handle = await ctx.agents.create({
        sessionId: SessionId(`bench-${process.pid}-${++sessions}`),
        agentOptions: { provider: 'scripted', model: 'bench' },
      })
      const agent = handle.agent
      return {
        go() {
          return new Promise<void>((resolve) => {
            const dispose = ctx.on('agent/status', (payload) => {
              if (payload.agent === agent && payload.status === 'idle') {
                dispose()
                resolve()
              }
            })
            agent.followup(createUserMessage({ content: [{ type: 'text', text: PROMPT }], source: { kind: 'user' } }))
          })
        },
        async after() {
          const events = agent.session.events.length
          const t0 = performance.now()
          await handle.dispose() // drains the persistence tail for 'jsonl'
          return { eventsPerStep: events / workload.steps, disposeMs: performance.now() - t0 }
        },
      }
    },
  }
}
