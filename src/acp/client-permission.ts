// Permission questions answered by the person at the editor: the permission plugin's `ask` sends ACP's
// `session/request_permission` for the call it is about and waits for the client's choice. A cancelled turn
// stops waiting at once (the loop answers the call ABORTED_BEFORE_DISPATCH, so it never runs); the client is
// told with `$/cancel_request`, and whatever it answers later decides nothing.
import type { AgentContext, PermissionOption, RequestPermissionResponse, ToolCallUpdate } from '@agentclientprotocol/sdk'
import type { PermissionAsk } from '../app/compose.js'
import type { AttributedAnswer, PermissionQuestion } from '../plugins/permission.js'

/** The choices a client offers: allow once, allow for the rest of the session, reject. */
export const PERMISSION_OPTIONS: readonly PermissionOption[] = Object.freeze([
  { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
  { optionId: 'always', name: 'Always allow this tool in this session', kind: 'allow_always' },
  { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
])

/** What the permission plugin records for each option (`by: 'user'`: the person at the client chose it). */
const ANSWERS: Readonly<Record<string, AttributedAnswer>> = {
  allow: { answer: 'yes', by: 'user' },
  always: { answer: 'always', by: 'user' },
  reject: { answer: 'no', by: 'user' },
}

/** The tool call shown with the question: the plugin's reason as its title, the call's arguments as its input. */
function questionedCall(question: PermissionQuestion): ToolCallUpdate {
  return { toolCallId: question.callId, title: question.reason, rawInput: question.arguments }
}

/**
 * A permission asker for one ACP session: asks `client` with `session/request_permission`. An option the client
 * did not offer, or an outcome of `cancelled` (the client dropped the question), is an error: the plugin logs
 * the call as not allowed and the model reads a denial.
 */
export function clientPermissionAsk(client: AgentContext, sessionId: string): PermissionAsk {
  return async (question) => {
    const response: RequestPermissionResponse = await client.request(
      'session/request_permission',
      { sessionId, toolCall: questionedCall(question), options: [...PERMISSION_OPTIONS] },
      // Cancel wins: stop waiting the moment the turn is cancelled (the loop stops waiting too).
      { cancellationSignal: question.signal, stopWaitingOnCancel: true },
    )
    if (response.outcome.outcome === 'cancelled') throw new Error('the client cancelled the permission question')
    const answer = ANSWERS[response.outcome.optionId]
    if (answer === undefined) throw new Error(`the client chose an option that was not offered: ${JSON.stringify(response.outcome.optionId)}`)
    return answer
  }
}
