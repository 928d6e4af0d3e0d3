import type { GenerateOptions } from '../llm/types.js'

const loopRequests = new WeakSet<object>()

/** Marks a request object as built by the loop (so it must be derivable from the log). */
export function markLoopRequest(request: GenerateOptions): void {
  loopRequests.add(request)
}

/** True for the exact request objects the loop built and dispatched. */
export function isLoopRequest(request: GenerateOptions): boolean {
  return loopRequests.has(request)
}
