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
   * Takes over `other`'s running state (a digest of the same log's first bytes that covers more of it): a writer
   * opened from a resume checkpoint without hashing the log goes on from the digest made when the log was read.
   */
  adopt(other: ContentDigest): void {
    this.#hash = other.#hash
    this.#bytes = other.#bytes
  }

  /**
   * A digest of `bytes` (a log's first bytes), fed in order and checked on the way against each of `witnesses`
   * (sorted by `bytes`, none past the end): undefined when one does not hold.
   */
  static checked(bytes: Uint8Array, witnesses: readonly ContentWitness[]): ContentDigest | undefined {
    const digest = new ContentDigest()
    for (const witness of witnesses) {
      digest.update(bytes.subarray(digest.bytes, witness.bytes), witness.bytes - digest.bytes)
      if (digest.witness().sha256 !== witness.sha256) return undefined
    }
    digest.update(bytes.subarray(digest.bytes), bytes.length - digest.bytes)
    return digest
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
