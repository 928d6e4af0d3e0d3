// What a reader can do about a failure, from its code alone: the hints the page shows under an error. They are
// phrased without any entry point's flag syntax because the same failure is read on the page, in `inspect` and in
// an embedding program; the CLI adds its own flag-specific advice on top (cli/turn-exit.ts).
import type { LlmFailure } from '../llm/types.js'

/** A hint for a model request or turn failure, when its code tells what to do; else undefined. */
export function modelFailureHint(failure: Pick<LlmFailure, 'code' | 'status'>): string | undefined {
  switch (failure.code) {
    case 'AUTH':
      return 'The provider refused the API key: check the key the server was started with.'
    case 'RATE_LIMIT':
      return 'The provider is rate-limiting this key: wait, or lower the number of sessions running at once.'
    case 'INSUFFICIENT_BALANCE':
      return 'The provider account is out of credit: top it up; retrying cannot help.'
    case 'TIMEOUT':
      return 'The endpoint went silent: check that it is up, or raise the idle timeout if it is only slow.'
    case 'TRANSPORT':
      return 'The endpoint could not be reached: check the base URL and the network.'
    case 'NOT_STREAMING':
      return 'The base URL does not answer like a streaming model endpoint: it probably lacks /v1.'
    case 'CONTEXT_WINDOW_EXCEEDED':
      return 'The history no longer fits the model: compact the session, or fork it from an earlier point.'
    case 'NO_ADAPTER':
      return 'No adapter serves this provider here: start the server with that provider configured.'
    case 'OUTPUT_INVALID':
      return 'The answer did not match the requested output schema, even after the repair attempts.'
    case 'BAD_REQUEST':
      return failure.status === 404 ? 'The endpoint answered 404: the base URL probably lacks /v1.' : undefined
    default:
      return undefined
  }
}

/** A hint for a failed tool call, when its code tells what to do; else undefined. */
export function toolFailureHint(code: string): string | undefined {
  switch (code) {
    case 'TOOL_DENIED':
      return 'The model was told the call was refused, and may try another way.'
    case 'TOOL_OUTCOME_UNKNOWN':
      return 'The process running the session stopped while this call ran: check whether its effect happened.'
    case 'TOOL_NOT_STARTED':
      return 'The process running the session stopped before this call started: it never ran.'
    case 'SANDBOX_UNAVAILABLE':
      return 'The shell sandbox (bubblewrap) is not available on the machine that runs the session.'
    case 'TOOL_TIMEOUT':
      return 'The call ran past its time limit and was stopped.'
    case 'UNKNOWN_TOOL':
      return 'The model asked for a tool this session does not have.'
    case 'INVALID_ARGS':
      return "The model's arguments did not match the tool's schema; it was told why."
    default:
      return undefined
  }
}
