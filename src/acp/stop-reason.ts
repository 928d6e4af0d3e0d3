import type { StopReason } from '@agentclientprotocol/sdk'
import type { TurnEndReason } from '../session/events.js'

/** How a prompt turn ended, for ACP: a stop reason, or a failure the prompt request answers with an error. */
export type PromptOutcome = { readonly stopReason: StopReason } | { readonly failure: { readonly code: string; readonly message: string } }

// How the budget plugins name their cancels ("turn budget: …", "cost budget: …"); SIGTERM and the like do not.
const BUDGET = /\bbudget\b/

/**
 * The ACP stop reason of a ledgerloop turn end:
 * - `completed` → `end_turn`; `max-tokens` → `max_tokens`;
 * - `aborted` by a budget plugin (a `{kind:'hook'}` cause naming a budget: the turn budget's steps or tokens,
 *   the cost budget) → `max_turn_requests`; aborted any other way (a `session/cancel`, the session closed, the
 *   process stopped) → `cancelled`;
 * - `blocked` (a pre-step listener refused the input: a guard, a policy) → `refusal`;
 * - `error` and `interrupted` are failures: the prompt request gets a JSON-RPC error naming the code.
 */
export function promptOutcome(reason: TurnEndReason): PromptOutcome {
  switch (reason.kind) {
    case 'completed':
      return { stopReason: 'end_turn' }
    case 'max-tokens':
      return { stopReason: 'max_tokens' }
    case 'blocked':
      return { stopReason: 'refusal' }
    case 'aborted':
      return { stopReason: reason.reason.kind === 'hook' && BUDGET.test(reason.reason.reason) ? 'max_turn_requests' : 'cancelled' }
    case 'error':
      return { failure: { code: reason.error.code, message: reason.error.message } }
    case 'interrupted':
      return { failure: { code: 'INTERRUPTED', message: 'the turn was interrupted (the process stopped mid-turn)' } }
  }
}
