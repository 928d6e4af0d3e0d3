// OpenAI Agents SDK (@openai/agents): Runner in streaming mode with a custom
// Model whose getStreamedResponse plays the workload. Tracing off.
// In memory only: the run state keeps the generated items.
import { Agent, run, setTracingDisabled, tool, type Model, type ModelRequest, type ModelResponse } from '@openai/agents'
import { z } from 'zod'
import type { CreateDriver } from '../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type StepPlan, type Workload } from '../src/workload.ts'

setTracingDisabled(true)

type StreamEvent = ReturnType<Model['getStreamedResponse']> extends AsyncIterable<infer E> ? E : never

const USAGE = { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }

function outputItems(plan: StepPlan, text: string) {
  const items: ModelResponse['output'] = [{
    type: 'message',
    id: `msg_${plan.index + 1}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text }],
  }]
  const call = plan.toolCall
  if (call) {
    items.push({
      type: 'function_call',
      id: `fc_${plan.index + 1}`,
      callId: call.id,
      name: call.name,
      arguments: call.argumentsJson,
      status: 'completed',
    })
  }
  return items
}

class ScriptedModel implements Model {
  private readonly workload: Workload
  constructor(workload: Workload) {
    this.workload = workload
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const plan = this.workload.beginStep(Array.isArray(request.input) ? request.input.length : 1)
    return { usage: USAGE as unknown as ModelResponse['usage'], output: outputItems(plan, plan.chunks.join('')) }
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const plan = this.workload.beginStep(Array.isArray(request.input) ? request.input.length : 1)
    yield { type: 'response_started' as const }
    let text = ''
    for (const delta of plan.chunks) {
      text += delta
      yield { type: 'output_text_delta' as const, delta }
    }
    yield {
      type: 'response_done',
      response: { id: `resp_${plan.index + 1}`, usage: USAGE, output: outputItems(plan, text) },
    } as StreamEvent
  }
}

export const createDriver: CreateDriver = async () => ({
  async prepare(workload) {
    const bump = tool({
      name: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      parameters: z.object({ step: z.number() }),
      execute: async (input) => workload.runTool(input),
    })
    const agent = new Agent({
      name: 'bench',
      instructions: SYSTEM_PROMPT,
      model: new ScriptedModel(workload),
      tools: [bump],
    })
    return {
      async go() {
        const result = await run(agent, PROMPT, { stream: true, maxTurns: workload.steps + 1 })
        for await (const _event of result) {
          // drain the event stream like a UI would
        }
        await result.completed
        if (result.error) throw result.error instanceof Error ? result.error : new Error(String(result.error))
      },
    }
  },
})
