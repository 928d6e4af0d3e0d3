import { createHash } from 'node:crypto'
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { JsonlCheckpointBlobs } from '../../src/store/jsonl/checkpoint-blobs.js'
import { PACK_HEADER_BYTES, scanPack } from '../../src/store/jsonl/checkpoint-pack.js'

const hashOf = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')
const dirs: string[] = []
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'll-blobs-'))
  dirs.push(dir)
  return join(dir, 'sessions')
}
const opened: JsonlCheckpointBlobs[] = []
function blobsIn(dir: string): JsonlCheckpointBlobs {
  const blobs = new JsonlCheckpointBlobs(dir)
  opened.push(blobs)
  return blobs
}
afterEach(async () => {
  for (const blobs of opened.splice(0)) await blobs.close()
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const packsOf = (blobs: JsonlCheckpointBlobs): string[] => readdirSync(blobs.packDir).filter((name) => name.endsWith('.pack'))
const blobMap = (contents: readonly Uint8Array[]): Map<string, Uint8Array> => new Map(contents.map((bytes) => [hashOf(bytes), bytes]))
const uniqueContents = (max: number) => fc.uniqueArray(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: max, selector: hashOf })

// Blobs are appended to a pack of the writing instance's own; a crash can tear only its unsynced tail. These pin
// down that every blob whose put resolved is found again, by this instance and by another one (another process),
// and that bytes that are not the blob are never returned.
describe('JSONL checkpoint blobs', () => {
  it('stores blobs in a private pack and gives the same bytes back, to this instance and to a fresh one', async () => {
    await fc.assert(
      fc.asyncProperty(uniqueContents(20), async (contents) => {
        const dir = scratch()
        const blobs = blobsIn(dir)
        await blobs.put(blobMap(contents))
        const fresh = blobsIn(dir)
        for (const bytes of contents) {
          expect((await blobs.get(hashOf(bytes)))?.equals(Buffer.from(bytes))).toBe(true)
          expect((await fresh.get(hashOf(bytes)))?.equals(Buffer.from(bytes))).toBe(true)
        }
        const [pack, ...others] = packsOf(blobs)
        expect(others).toEqual([])
        expect(statSync(join(blobs.packDir, pack as string)).mode & 0o777).toBe(0o600)
        for (const folder of [blobs.dir, blobs.packDir]) expect(statSync(folder).mode & 0o777).toBe(0o700)
        await blobs.close()
      }),
      { numRuns: 15 },
    )
  })

  it('writes a blob once however often it is put, and many puts at once all land', async () => {
    const blobs = blobsIn(scratch())
    const contents = Array.from({ length: 50 }, (_, i) => Buffer.from(`blob ${i}\n`.repeat(i + 1)))
    await Promise.all(contents.map((bytes) => blobs.put(blobMap([bytes]))))
    const pack = join(blobs.packDir, packsOf(blobs)[0] as string)
    const records = async (): Promise<string[]> => {
      const file = await open(pack, 'r')
      const hashes: string[] = []
      try {
        await scanPack(file, pack, 0, (hash) => hashes.push(hash))
      } finally {
        await file.close()
      }
      return hashes.sort()
    }
    const once = contents.map(hashOf).sort()
    expect(await records()).toEqual(once)
    await Promise.all(contents.map((bytes) => blobs.put(blobMap([bytes]))))
    expect(await records()).toEqual(once)
    const fresh = blobsIn(join(blobs.dir, '..'))
    for (const bytes of contents) expect((await fresh.get(hashOf(bytes)))?.equals(bytes)).toBe(true)
  })

  it('after a crash tore the tail of a pack, finds every whole record before it and nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(uniqueContents(12), fc.double({ min: 0, max: 1, noNaN: true }), fc.uint8Array({ maxLength: 200 }), async (contents, cutAt, garbage) => {
        const dir = scratch()
        const writer = blobsIn(dir)
        // One put per blob: records in order, as a session's calls write them.
        for (const bytes of contents) await writer.put(blobMap([bytes]))
        await writer.close()
        const pack = join(writer.packDir, packsOf(writer)[0] as string)
        // The pack is grown ahead with zeros: cut inside the records.
        const recordBytes = contents.reduce((sum, bytes) => sum + PACK_HEADER_BYTES + bytes.length, 0)
        const cut = Math.floor(recordBytes * cutAt)
        // What a crash may leave: the file cut anywhere, then whatever the disk held after the cut.
        truncateSync(pack, cut)
        appendFileSync(pack, garbage)
        const reader = blobsIn(dir)
        let end = 0
        for (const bytes of contents) {
          end += PACK_HEADER_BYTES + bytes.length
          const got = await reader.get(hashOf(bytes))
          if (end <= cut) expect(got?.equals(Buffer.from(bytes))).toBe(true)
          // Beyond the cut the blob may be found only if its bytes are whole after all; never other bytes.
          else if (got !== undefined) expect(hashOf(got)).toBe(hashOf(bytes))
        }
      }),
      { numRuns: 40 },
    )
  })

  it('a new instance writes a pack of its own and finds the blobs of the packs before it', async () => {
    const dir = scratch()
    const first = blobsIn(dir)
    const a = Buffer.from('first process')
    await first.put(blobMap([a]))
    const second = blobsIn(dir)
    const b = Buffer.from('second process')
    await second.put(blobMap([b]))
    expect(packsOf(second)).toHaveLength(2)
    // The first instance sees the second's pack appear, though it scanned none before.
    expect((await first.get(hashOf(b)))?.equals(b)).toBe(true)
    expect((await second.get(hashOf(a)))?.equals(a)).toBe(true)
    // After close, blobs are still found (by the scan), and a put opens a new pack.
    await first.close()
    expect((await first.get(hashOf(a)))?.equals(a)).toBe(true)
    await first.put(blobMap([Buffer.from('after close')]))
    expect(packsOf(first)).toHaveLength(3)
  })

  it('still reads a blob of the one-file-per-blob layout, and never a torn one', async () => {
    const dir = scratch()
    const blobs = blobsIn(dir)
    const whole = Buffer.from('an older build stored this')
    const torn = Buffer.from('the bytes before the change\n'.repeat(100))
    for (const bytes of [whole, torn]) mkdirSync(join(blobs.dir, hashOf(bytes).slice(0, 2)), { recursive: true })
    writeFileSync(join(blobs.dir, hashOf(whole).slice(0, 2), hashOf(whole)), whole)
    writeFileSync(join(blobs.dir, hashOf(torn).slice(0, 2), hashOf(torn)), torn.subarray(0, 1000))
    expect((await blobs.get(hashOf(whole)))?.equals(whole)).toBe(true)
    expect(await blobs.get(hashOf(torn))).toBeUndefined()
    await blobs.put(blobMap([torn]))
    expect((await blobs.get(hashOf(torn)))?.equals(torn)).toBe(true)
  })

  it('answers an unknown hash with undefined and refuses a key that is not a hash', async () => {
    const blobs = blobsIn(scratch())
    expect(await blobs.get('0'.repeat(64))).toBeUndefined()
    await expect(blobs.put(new Map([['../escape', Buffer.from('x')]]))).rejects.toMatchObject({ code: 'INVALID_ARGS' })
    await expect(blobs.get('../escape')).rejects.toMatchObject({ code: 'INVALID_ARGS' })
  })
})
