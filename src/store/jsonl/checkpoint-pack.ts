// The record format of a JSONL store's checkpoint pack (`.checkpoints/packs/*.pack`), and the scan that finds
// the blobs in one. A pack is a sequence of records, each a fixed 56-byte header and then the blob's bytes:
//
//   0  magic "LLCP"     4  version (1), 3 zero bytes     8  byte length (u64, big-endian)
//   16 SHA-256 of the bytes (32, raw)                    48 first 8 bytes of the SHA-256 of bytes 0..47
//
// The header's own check lets a scan tell a header from whatever a crash left at the tail (zeros, half a
// record) without trusting a length it read from garbage; the blob's hash is checked again when it is read.
import { createHash } from 'node:crypto'
import type { FileHandle } from 'node:fs/promises'

/** Bytes of a record's header. */
export const PACK_HEADER_BYTES = 56
const MAGIC = Buffer.from('LLCP', 'latin1')
const VERSION = 1
// A scan reads this much at a time: many small records per read, and a large blob is skipped, never read.
const SCAN_CHUNK = 1 << 20

/** Where a blob's bytes are in a pack. */
export interface PackedBlob {
  readonly path: string
  /** Offset of the bytes (after the header). */
  readonly offset: number
  readonly length: number
}

/** The header of a record for `bytes`, whose SHA-256 (hex) is `hash`. */
export function packHeader(hash: string, length: number): Buffer {
  const header = Buffer.alloc(PACK_HEADER_BYTES)
  MAGIC.copy(header, 0)
  header[4] = VERSION
  header.writeBigUInt64BE(BigInt(length), 8)
  header.write(hash, 16, 32, 'hex')
  createHash('sha256').update(header.subarray(0, 48)).digest().copy(header, 48, 0, 8)
  return header
}

/** The hash and length a header holds, or undefined when these 56 bytes are not a whole, valid header. */
export function readPackHeader(header: Buffer): { hash: string; length: number } | undefined {
  if (header.length < PACK_HEADER_BYTES || !header.subarray(0, 4).equals(MAGIC) || header[4] !== VERSION) return undefined
  const check = createHash('sha256').update(header.subarray(0, 48)).digest().subarray(0, 8)
  if (!check.equals(header.subarray(48, 56))) return undefined
  const length = header.readBigUInt64BE(8)
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) return undefined
  return { hash: header.toString('hex', 16, 48), length: Number(length) }
}

/**
 * Reads the records of the pack open as `file` from `from` on, calling `found` for each whole one, and returns
 * where the scan stopped: the end of the last whole record. It stops at the first place that does not hold a
 * valid header followed by all of its bytes — the end, or a tail a crash left; every blob whose `put`
 * resolved lies before that place (see checkpoint-blobs.ts).
 */
export async function scanPack(file: FileHandle, path: string, from: number, found: (hash: string, blob: PackedBlob) => void): Promise<number> {
  const { size } = await file.stat()
  const chunk = Buffer.alloc(SCAN_CHUNK)
  let position = from
  while (position + PACK_HEADER_BYTES <= size) {
    const { bytesRead } = await file.read(chunk, 0, Math.min(SCAN_CHUNK, size - position), position)
    if (bytesRead < PACK_HEADER_BYTES) break
    // Every header that lies whole inside this chunk, without another read.
    let at = 0
    let stop = false
    while (at + PACK_HEADER_BYTES <= bytesRead) {
      const header = readPackHeader(chunk.subarray(at, at + PACK_HEADER_BYTES))
      const start = position + at + PACK_HEADER_BYTES
      if (header === undefined || start + header.length > size) {
        stop = true
        break
      }
      found(header.hash, { path, offset: start, length: header.length })
      at += PACK_HEADER_BYTES + header.length
    }
    position += at
    if (stop || at === 0) break
  }
  return position
}
