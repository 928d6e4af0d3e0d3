// Vercel AI SDK (`ai`): streamText with tools and a step-count stop condition,
// the model being ai/test's MockLanguageModelV4 whose doStream plays the workload.
// In memory only: the SDK keeps the step messages of the call.
import type { LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider'
import { isStepCount, jsonSchema, streamText, tool } from 'ai'
import { MockLanguageModelV4 } from 'ai/test'
import type { CreateDriver } from '../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../src/workload.ts'

const USAGE: LanguageModelV4Usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
}

function scriptedModel(workload: Workload): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    provider: 'scripted',
    modelId: 'bench',
    async doStream(options) {
      const plan = workload.beginStep(options.prompt.length)
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] })
          controller.enqueue({ type: 'text-start', id: 't' })
          for (const delta of plan.chunks) controller.enqueue({ type: 'text-delta', id: 't', delta })
          controller.enqueue({ type: 'text-end', id: 't' })
          const call = plan.toolCall
          if (call) {
            controller.enqueue({ type: 'tool-input-start', id: call.id, toolName: call.name })
            controller.enqueue({ type: 'tool-input-delta', id: call.id, delta: call.argumentsJson })
            controller.enqueue({ type: 'tool-input-end', id: call.id })
            controller.enqueue({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.argumentsJson })
          }
          controller.enqueue({
            type: 'finish',
            usage: USAGE,
            finishReason: call ? { unified: 'tool-calls', raw: 'tool_calls' } : { unified: 'stop', raw: 'stop' },
          })
          controller.close()
        },
      })
      return { stream }
    },
  })
}

export const createDriver: CreateDriver = async () => ({
  async prepare(workload) {
    const model = scriptedModel(workload)
    const bump = tool({
      description: TOOL_DESCRIPTION,
      inputSchema: jsonSchema<{ step: number }>({
        type: 'object',
        properties: { step: { type: 'number' } },
        required: ['step'],
        additionalProperties: false,
      }),
      execute: async (input: { step: number }) => workload.runTool(input),
    })
    return {
      async go() {
        const result = streamText({
          model,
          system: SYSTEM_PROMPT,
          prompt: PROMPT,
          tools: { [TOOL_NAME]: bump },
          stopWhen: isStepCount(workload.steps + 1),
          maxRetries: 0,
        })
        for await (const part of result.fullStream) {
          if (part.type === 'error') throw part.error instanceof Error ? part.error : new Error(String(part.error))
        }
      },
    }
  },
})
