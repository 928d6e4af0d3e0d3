// The public test for a loop-built request, kept for callers from before the request carried its origin.
import type { GenerateOptions } from '../llm/types.js'

/**
 * True for a request the agent loop built from the log (its `origin` is `'loop'`).
 * @deprecated Read `request.origin === 'loop'` instead (the origin is a field of the request, see
 * {@link GenerateOptions.origin}); this alias reads that field and stays for existing callers.
 */
export function isLoopRequest(request: GenerateOptions): boolean {
  return request.origin === 'loop'
}
