/**
 * Keeps the first `headBytes` and the last `tailBytes` of a byte stream and counts what fell in between, so a
 * command that prints gigabytes costs bounded memory and the model still sees how it started and ended.
 */
export class HeadTailCapture {
  #head: Buffer[] = []
  #headSize = 0
  #tail: Buffer[] = []
  #tailSize = 0
  #total = 0

  /**
   * @param headBytes - bytes kept from the start
   * @param tailBytes - bytes kept from the end
   */
  constructor(
    readonly headBytes: number,
    readonly tailBytes: number,
  ) {}

  /** Bytes pushed so far. */
  get total(): number {
    return this.#total
  }

  /** Appends a chunk. */
  push(chunk: Buffer): void {
    this.#total += chunk.length
    let rest = chunk
    if (this.#headSize < this.headBytes) {
      const take = Math.min(this.headBytes - this.#headSize, rest.length)
      this.#head.push(rest.subarray(0, take))
      this.#headSize += take
      rest = rest.subarray(take)
    }
    if (rest.length === 0) return
    this.#tail.push(rest)
    this.#tailSize += rest.length
    // Drop whole chunks only while what remains still covers the tail; the final trim happens in render().
    while (this.#tail.length > 1 && this.#tailSize - (this.#tail[0] as Buffer).length >= this.tailBytes) {
      this.#tailSize -= (this.#tail.shift() as Buffer).length
    }
  }

  /** The kept text, with a marker where bytes were cut, and how many were cut. */
  render(): { text: string; cutBytes: number } {
    const head = Buffer.concat(this.#head)
    const tailAll = Buffer.concat(this.#tail)
    const tail = tailAll.subarray(Math.max(0, tailAll.length - this.tailBytes))
    const cutBytes = this.#total - head.length - tail.length
    if (cutBytes === 0) return { text: Buffer.concat([head, tail]).toString('utf8'), cutBytes }
    const marker = `\n\n[… ${cutBytes} bytes of output cut here …]\n\n`
    return { text: head.toString('utf8') + marker + tail.toString('utf8'), cutBytes }
  }
}
