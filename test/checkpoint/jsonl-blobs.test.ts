import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { JsonlCheckpointBlobs } from '../../src/store/jsonl/checkpoint-blobs.js'

const hashOf = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')
const dirs: string[] = []
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'll-blobs-'))
  dirs.push(dir)
  return join(dir, 'sessions')
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

// Blobs are created in place under their hash (no temporary name + rename), so a crash mid-write can leave a
// torn file under a blob's name; these pin down that such a file is never taken for the blob.
describe('JSONL checkpoint blobs', () => {
  it('stores each blob under its hash, private, and gives the same bytes back', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 20, selector: hashOf }), async (contents) => {
        const blobs = new JsonlCheckpointBlobs(scratch())
        await blobs.put(new Map(contents.map((bytes) => [hashOf(bytes), bytes])))
        for (const bytes of contents) {
          const hash = hashOf(bytes)
          expect(Buffer.compare((await blobs.get(hash)) as Buffer, Buffer.from(bytes))).toBe(0)
          expect(statSync(join(blobs.dir, hash.slice(0, 2), hash)).mode & 0o777).toBe(0o600)
        }
        // No temporary file is left behind.
        for (const folder of readdirSync(blobs.dir)) expect(readdirSync(join(blobs.dir, folder)).filter((name) => name.endsWith('.tmp'))).toEqual([])
      }),
      { numRuns: 15 },
    )
  })

  it('never returns a torn blob, and a put of the same blob replaces it whole', async () => {
    const bytes = Buffer.from('the bytes before the change\n'.repeat(100))
    const hash = hashOf(bytes)
    const blobs = new JsonlCheckpointBlobs(scratch())
    const folder = join(blobs.dir, hash.slice(0, 2))
    mkdirSync(folder, { recursive: true })
    // What a crash half way through writing the blob leaves.
    writeFileSync(join(folder, hash), bytes.subarray(0, 1000))
    expect(await blobs.get(hash)).toBeUndefined()
    await blobs.put(new Map([[hash, bytes]]))
    expect(readFileSync(join(folder, hash)).equals(bytes)).toBe(true)
    expect((await blobs.get(hash))?.equals(bytes)).toBe(true)
  })

  it('keeps a whole blob another writer stored, and answers a second put of it', async () => {
    const dir = scratch()
    const bytes = Buffer.from('shared by two sessions')
    const hash = hashOf(bytes)
    await new JsonlCheckpointBlobs(dir).put(new Map([[hash, bytes]]))
    const path = join(dir, '.checkpoints', hash.slice(0, 2), hash)
    const inode = statSync(path).ino
    const other = new JsonlCheckpointBlobs(dir)
    await other.put(new Map([[hash, bytes]]))
    expect(statSync(path).ino).toBe(inode)
    expect((await other.get(hash))?.equals(bytes)).toBe(true)
  })

  it('answers an unknown hash with undefined and refuses a key that is not a hash', async () => {
    const blobs = new JsonlCheckpointBlobs(scratch())
    expect(await blobs.get('0'.repeat(64))).toBeUndefined()
    await expect(blobs.put(new Map([['../escape', Buffer.from('x')]]))).rejects.toMatchObject({ code: 'INVALID_ARGS' })
    await expect(blobs.get('../escape')).rejects.toMatchObject({ code: 'INVALID_ARGS' })
  })
})
