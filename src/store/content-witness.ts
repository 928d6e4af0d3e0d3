import { createHash, type Hash } from 'node:crypto'

/**
 * What a JSONL writer committed, as the session index keeps it beside the size: the SHA-256 of the log's first
 * `bytes` bytes. Loading compares it with the file, so an edit that leaves every line valid JSON and the
 * structure intact (a message's text, a tool result's text) is refused instead of continued. It guards against
 * edits and stray writes, not an attacker: whoever can write the log can write the index too.
 */
export interface ContentWitness {
  /** How many bytes of the log the digest covers (the size the writer had committed when it recorded it). */
  readonly bytes: number
  /** Lower-case hex SHA-256 of those bytes. */
  readonly sha256: string
}

/**
 * A running SHA-256 of a log's bytes from its first byte on: the writer feeds it the text of every batch it has
 * written (the bytes it already holds, never a re-read of the file), and hands out a {@link ContentWitness} of
 * everything so far whenever the session index is updated.
 * @internal
 */
export class ContentDigest {
  #hash: Hash = createHash('sha256')
  #bytes = 0

  /** Bytes fed in so far. */
  get bytes(): number {
    return this.#bytes
  }

  /**
   * Feeds the next bytes of the log.
   * @param length - the byte length of `data` (UTF-8 for a string); the caller knows it already
   */
  update(data: string | Uint8Array, length: number): void {
    if (typeof data === 'string') this.#hash.update(data, 'utf8')
    else this.#hash.update(data)
    this.#bytes += length
  }

  /**
   * Starts over from the log's first byte: `parts` are the log's bytes from 0 on, in order. A writer opened from a
   * resume checkpoint without reading the log catches up so once the log has been read.
   */
  restart(parts: readonly Uint8Array[]): void {
    this.#hash = createHash('sha256')
    this.#bytes = 0
    for (const part of parts) this.update(part, part.length)
  }

  /** The witness of everything fed in so far (the running state goes on: a copy is finalised). */
  witness(): ContentWitness {
    return { bytes: this.#bytes, sha256: this.#hash.copy().digest('hex') }
  }
}

/** Whether a value read from the index is a well-formed witness (an older or damaged line may hold anything). */
export function isContentWitness(value: unknown): value is ContentWitness {
  if (typeof value !== 'object' || value === null) return false
  const w = value as Record<string, unknown>
  return Number.isSafeInteger(w.bytes) && (w.bytes as number) >= 0 && typeof w.sha256 === 'string' && /^[0-9a-f]{64}$/.test(w.sha256)
}
