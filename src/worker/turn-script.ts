import type { ScriptStep } from '../llm/adapters/scripted.js'
import type { GenerateOptions, Message } from '../llm/types.js'

/**
 * A scripted model for many sessions at once: every turn of every session replays `steps` from the start.
 * The step a request gets is the number of assistant replies since the last user prompt, so it depends only on
 * the session's own history — the same on whichever worker runs the turn, also after a takeover. Tool call ids
 * are derived from the prompt's ordinal and the step (`t<prompt>_<step>_<call>`), unique within a session.
 * A turn that outlives the script ends with the scripted adapter's `SCRIPT_EXHAUSTED`.
 * @example
 * ```ts
 * scriptedAdapter({ script: turnScript([{ toolCalls: [{ name: 'record', arguments: {} }] }, { text: 'done' }]) })
 * ```
 */
export function turnScript(steps: readonly ScriptStep[]): (request: GenerateOptions) => ScriptStep {
  return (request) => {
    const { prompts, replies } = positionInTurn(request.messages)
    const step = steps[replies]
    if (step === undefined) return { error: { code: 'SCRIPT_EXHAUSTED', message: `the script has no step #${replies + 1} for this turn` } }
    if (!('toolCalls' in step) || step.toolCalls === undefined) return step
    return {
      ...step,
      toolCalls: step.toolCalls.map((call, n) => ({ ...call, id: call.id ?? `t${prompts}_${replies + 1}_${n + 1}` })),
    }
  }
}

function positionInTurn(messages: readonly Message[]): { prompts: number; replies: number } {
  let prompts = 0
  let replies = 0
  for (const message of messages) {
    if (message.role === 'assistant') replies++
    else if (message.source.kind === 'user') {
      prompts++
      replies = 0
    }
  }
  return { prompts, replies }
}
