// LangGraph (@langchain/langgraph): the prebuilt ReAct agent with a MemorySaver
// checkpointer, streamed in 'messages' mode, driven by a scripted tool-calling
// chat model written here (a BaseChatModel that streams the workload).
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager'
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, AIMessageChunk, type BaseMessage } from '@langchain/core/messages'
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs'
import { tool } from '@langchain/core/tools'
import { MemorySaver } from '@langchain/langgraph'
import { createReactAgent } from '@langchain/langgraph/prebuilt'
import { z } from 'zod'
import type { CreateDriver } from '../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, type Workload } from '../src/workload.ts'

class ScriptedChatModel extends BaseChatModel {
  private readonly workload: Workload
  constructor(workload: Workload) {
    super({})
    this.workload = workload
  }

  _llmType(): string {
    return 'scripted'
  }

  /** The tools are fixed by the script; binding them changes nothing. */
  bindTools(): this {
    return this
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const plan = this.workload.beginStep(messages.length)
    const text = plan.chunks.join('')
    const call = plan.toolCall
    const message = new AIMessage({
      content: text,
      tool_calls: call ? [{ id: call.id, name: call.name, args: call.args, type: 'tool_call' }] : [],
    })
    return { generations: [{ message, text }] }
  }

  async *_streamResponseChunks(
    messages: BaseMessage[],
    _options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const plan = this.workload.beginStep(messages.length)
    for (const delta of plan.chunks) {
      const chunk = new ChatGenerationChunk({ text: delta, message: new AIMessageChunk({ content: delta }) })
      yield chunk
      await runManager?.handleLLMNewToken(delta, undefined, undefined, undefined, undefined, { chunk })
    }
    const call = plan.toolCall
    if (call) {
      const message = new AIMessageChunk({
        content: '',
        tool_call_chunks: [{ type: 'tool_call_chunk', id: call.id, name: call.name, args: call.argumentsJson, index: 0 }],
      })
      const chunk = new ChatGenerationChunk({ text: '', message })
      yield chunk
      await runManager?.handleLLMNewToken('', undefined, undefined, undefined, undefined, { chunk })
    }
  }
}

let threads = 0

/** Variant '' uses a MemorySaver checkpointer; 'no-checkpointer' runs the same graph without one. */
export const createDriver: CreateDriver = async (variant) => ({
  async prepare(workload) {
    const bump = tool(async (input: { step: number }) => workload.runTool(input), {
      name: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      schema: z.object({ step: z.number() }),
    })
    const agent = createReactAgent({
      llm: new ScriptedChatModel(workload),
      tools: [bump],
      ...(variant === 'no-checkpointer' ? {} : { checkpointSaver: new MemorySaver() }),
      prompt: SYSTEM_PROMPT,
    })
    const config = {
      configurable: { thread_id: `bench-${++threads}` },
      streamMode: 'messages' as const,
      recursionLimit: 2 * workload.steps + 10,
    }
    return {
      async go() {
        const stream = await agent.stream({ messages: [{ role: 'user', content: PROMPT }] }, config)
        for await (const _part of stream) {
          // drain the token stream like a UI would
        }
      },
    }
  },
})
