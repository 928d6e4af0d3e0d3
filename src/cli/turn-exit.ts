// What the CLI makes of a turn end: its exit code and what to do about a failure, in terms of the CLI's own flags.
// views/turn-outcome.ts says how a turn ended (verdict, failure); the exit codes and flag names are the CLI's, so
// they live here and views/ imports nothing from cli/.
import type { TurnEndReason } from '../session/events.js'
import { turnFailure, turnVerdict } from '../views/turn-outcome.js'
import { EXIT } from './cli-error.js'

/** The exit code for a turn end: 0 completed/max-tokens, 130 cancelled by the user, else 1. */
export function exitCodeFor(reason: TurnEndReason): number {
  switch (turnVerdict(reason)) {
    case 'succeeded':
      return EXIT.ok
    case 'cancelled':
      return EXIT.interrupted
    case 'failed':
      return EXIT.failed
  }
}

/**
 * What to do about a failed turn, where the failure tells: a wrong base URL (an endpoint that does not stream,
 * or a 404), a missing or rejected key, a stalled server.
 */
export function failureHint(reason: TurnEndReason, route: { readonly baseURL?: string }): string | undefined {
  const failure = turnFailure(reason)
  if (failure === undefined) return undefined
  const { code, status } = failure
  if (code === 'NOT_STREAMING' || (code === 'BAD_REQUEST' && status === 404)) {
    const base = route.baseURL
    if (base !== undefined && !/\/v\d+\/?$/.test(base)) return `--base-url probably lacks /v1 (try ${base.replace(/\/+$/, '')}/v1)`
    return 'check --base-url: the server there is not an OpenAI-format (or Anthropic-format) streaming endpoint'
  }
  if (code === 'AUTH') return 'check the API key (ledgerloop config shows which variable is read)'
  if (code === 'TIMEOUT' && /response watchdog/.test(failure.message)) {
    return `the server at ${route.baseURL ?? 'the provider'} never answered; check --base-url and that it is up, or raise --response-timeout SECONDS (a local server loading its model)`
  }
  if (code === 'TIMEOUT') return 'the server went silent; raise --idle-timeout SECONDS if it is just slow'
  if (code === 'INSUFFICIENT_BALANCE') return "top up the provider account; retrying cannot help"
  return undefined
}
