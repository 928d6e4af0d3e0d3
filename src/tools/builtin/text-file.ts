import type { FileHandle } from 'node:fs/promises'
import { HarnessError } from '../../errors/harness-error.js'

/** How much of a file's start is inspected to decide whether it is binary (git uses the same 8000-byte idea). */
export const BINARY_SNIFF_BYTES = 8192

/** Splits text into lines the way `read_file` numbers them (LF, CRLF or a lone CR). */
export const LINE_BREAK = /\r\n|\n|\r/

/**
 * Whether a file's first bytes look binary: a NUL byte, which text in any encoding we show never contains.
 * Cheap and conservative, so UTF-8 text with unusual characters is still read as text.
 */
export function looksBinary(head: Uint8Array): boolean {
  return head.subarray(0, BINARY_SNIFF_BYTES).includes(0)
}

/** Reads the first {@link BINARY_SNIFF_BYTES} of an open file and applies {@link looksBinary}. */
export async function handleLooksBinary(handle: FileHandle): Promise<boolean> {
  const head = Buffer.alloc(BINARY_SNIFF_BYTES)
  const { bytesRead } = await handle.read(head, 0, head.length, 0)
  return looksBinary(head.subarray(0, bytesRead))
}

/** Cuts `line` to `max` characters, saying how much was dropped, so one minified line cannot flood the output. */
export function clipLine(line: string, max: number): { text: string; clipped: boolean } {
  if (line.length <= max) return { text: line, clipped: false }
  return { text: `${line.slice(0, max)}… [${line.length - max} more characters]`, clipped: true }
}

/** The `FILE_TOO_LARGE` error for a file over a size limit, naming the limit so the user knows what to raise. */
export function tooLarge(given: string, size: number, max: number, what: 'read' | 'written'): HarnessError {
  const setting = what === 'read' ? 'maxFileBytes' : 'maxWriteBytes'
  return new HarnessError(
    `${JSON.stringify(given)} is ${size} bytes, over the ${max}-byte limit for files ${what} by the file tools (limits.${setting}); ` +
      (what === 'read' ? 'search it with grep or look at parts of it with bash (head, tail, sed -n)' : 'write it in smaller files'),
    'FILE_TOO_LARGE',
  )
}
