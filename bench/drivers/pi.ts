// pi (@mariozechner/pi-agent-core): the Agent class with a scripted streamFn.
// In memory only: pi keeps the transcript in agent.state.messages.
import { Agent, type AgentTool } from '@mariozechner/pi-agent-core'
import {
  createAssistantMessageEventStream,
  Type,
  type AssistantMessage,
  type Context,
  type Model,
  type Usage,
} from '@mariozechner/pi-ai'
type PiEvent = Parameters<ReturnType<typeof createAssistantMessageEventStream>['push']>[0]
import type { CreateDriver } from '../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../src/workload.ts'

const model: Model<'openai-completions'> = {
  id: 'bench',
  name: 'bench',
  api: 'openai-completions',
  provider: 'scripted',
  baseUrl: 'http://127.0.0.1:9',
  reasoning: false,
  input: ['text'],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 4096,
}

function usage(): Usage {
  return {
    input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  }
}

/**
 * A streamFn that plays the workload: text deltas, then one tool call, on one mutable partial message. Every
 * event is pushed before the stream is returned (an eager queue).
 */
function scriptedStream(workload: Workload) {
  return (m: Model<any>, context: Context) => {
    const plan = workload.beginStep(context.messages.length)
    const stream = createAssistantMessageEventStream()
    const partial: AssistantMessage = {
      role: 'assistant', content: [], api: m.api, provider: m.provider, model: m.id,
      usage: usage(), stopReason: plan.toolCall ? 'toolUse' : 'stop', timestamp: Date.now(),
    }
    stream.push({ type: 'start', partial })
    const text = { type: 'text' as const, text: '' }
    partial.content.push(text)
    stream.push({ type: 'text_start', contentIndex: 0, partial })
    for (const delta of plan.chunks) {
      text.text += delta
      stream.push({ type: 'text_delta', contentIndex: 0, delta, partial })
    }
    stream.push({ type: 'text_end', contentIndex: 0, content: text.text, partial })
    const call = plan.toolCall
    if (call) {
      const toolCall = { type: 'toolCall' as const, id: call.id, name: call.name, arguments: {} as Record<string, unknown> }
      partial.content.push(toolCall)
      stream.push({ type: 'toolcall_start', contentIndex: 1, partial })
      stream.push({ type: 'toolcall_delta', contentIndex: 1, delta: call.argumentsJson, partial })
      toolCall.arguments = JSON.parse(call.argumentsJson) as Record<string, unknown>
      stream.push({ type: 'toolcall_end', contentIndex: 1, toolCall, partial })
    }
    stream.push({ type: 'done', reason: plan.toolCall ? 'toolUse' : 'stop', message: partial })
    stream.end()
    return stream
  }
}

/**
 * The same step from an `async *` generator that a pump pushes into the stream as it yields (the `async`
 * variant): how pi-ai's own providers feed the stream from a network response, and the shape of ledgerloop's
 * plain double (an `async *` adapter building each chunk as it goes), so the two pay for one generator each.
 */
function generatedStream(workload: Workload) {
  return (m: Model<any>, context: Context) => {
    const stream = createAssistantMessageEventStream()
    void (async () => {
      for await (const event of stepEvents(m, context, workload)) stream.push(event)
      stream.end()
    })()
    return stream
  }
}

async function* stepEvents(m: Model<any>, context: Context, workload: Workload): AsyncGenerator<PiEvent> {
  const plan = workload.beginStep(context.messages.length)
  const partial: AssistantMessage = {
    role: 'assistant', content: [], api: m.api, provider: m.provider, model: m.id,
    usage: usage(), stopReason: plan.toolCall ? 'toolUse' : 'stop', timestamp: Date.now(),
  }
  yield { type: 'start', partial }
  const text = { type: 'text' as const, text: '' }
  partial.content.push(text)
  yield { type: 'text_start', contentIndex: 0, partial }
  for (const delta of plan.chunks) {
    text.text += delta
    yield { type: 'text_delta', contentIndex: 0, delta, partial }
  }
  yield { type: 'text_end', contentIndex: 0, content: text.text, partial }
  const call = plan.toolCall
  if (call) {
    const toolCall = { type: 'toolCall' as const, id: call.id, name: call.name, arguments: {} as Record<string, unknown> }
    partial.content.push(toolCall)
    yield { type: 'toolcall_start', contentIndex: 1, partial }
    yield { type: 'toolcall_delta', contentIndex: 1, delta: call.argumentsJson, partial }
    toolCall.arguments = JSON.parse(call.argumentsJson) as Record<string, unknown>
    yield { type: 'toolcall_end', contentIndex: 1, toolCall, partial }
  }
  yield { type: 'done', reason: plan.toolCall ? 'toolUse' : 'stop', message: partial }
}

export const createDriver: CreateDriver = async (variant) => ({
  async prepare(workload) {
    const bump: AgentTool<any> = {
      name: TOOL_NAME,
      label: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      parameters: Type.Object({ step: Type.Number() }),
      async execute(_id, params) {
        return { content: [{ type: 'text', text: workload.runTool(params) }], details: undefined }
      },
    }
    const agent = new Agent({
      initialState: { systemPrompt: SYSTEM_PROMPT, model, tools: [bump], messages: [] },
      streamFn: variant === 'async' ? generatedStream(workload) : scriptedStream(workload),
      toolExecution: 'sequential',
    })
    return {
      async go() {
        await agent.prompt(PROMPT)
        const error = agent.state.errorMessage
        if (error) throw new Error(`pi agent error: ${error}`)
      },
    }
  },
})
