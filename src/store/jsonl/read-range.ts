import { readSync } from 'node:fs'

/**
 * The bytes of `fd` from `start` up to `end` (exclusive), read synchronously; shorter when the file ends first
 * (a journal or index another process may have just truncated is read as far as it goes).
 */
export function readRange(fd: number, start: number, end: number): Buffer {
  const buffer = Buffer.alloc(Math.max(0, end - start))
  for (let done = 0; done < buffer.length; ) {
    const n = readSync(fd, buffer, done, buffer.length - done, start + done)
    if (n === 0) return buffer.subarray(0, done)
    done += n
  }
  return buffer
}
