import type { StreamChunk } from './types.js'

/**
 * Deep-freezes a freshly built chunk and returns it. Adapters freeze what they stream so the session log can
 * adopt each chunk as is instead of copying it (a chunk is the bulk of every log).
 */
export function freezeChunk<T extends StreamChunk>(chunk: T): T {
  freezeTree(chunk)
  return chunk
}

function freezeTree(value: object): void {
  if (Object.isFrozen(value)) return
  Object.freeze(value)
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) freezeTree(child as object)
}
