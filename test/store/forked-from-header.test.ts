import { describe, expect, it } from 'vitest'
import { Session } from '../../src/index.js'
import { STORE_KINDS, useStoreKit } from './store-kits.js'

// A rerun's session names the recorded session it reran in its header (issue 25). Every store must give the
// field back on read and in its listing, or `sessions` and `inspect` cannot say "rerun of …".
describe.each(STORE_KINDS)('a rerun header (forkedFrom) in $name', (kind) => {
  const currentKit = useStoreKit(kind)

  it('survives a reload by another instance and shows in list()', async () => {
    const kit = currentKit()
    const seed = new Session({ id: 'orig' })
    seed.append('session/title', { title: 'seeded' })
    const header = { version: 1, id: 'rerun-1', createdAt: 1_700_000_000_000, cwd: '/w', parentSession: 'orig', forkedFrom: 'orig', seedLength: 1 }
    const child = new Session({ id: 'rerun-1', header, seed: [...seed.events], endSeed: true })
    expect(child.header.forkedFrom).toBe('orig')
    const writer = await kit.store.create(child.header, child.events)
    await writer.close()
    expect((await kit.another().read('rerun-1')).header).toEqual(header)
    expect((await kit.another().list()).find((s) => s.id === 'rerun-1')).toMatchObject({ parentSession: 'orig', forkedFrom: 'orig' })
  })

  it('a plain fork has no forkedFrom', async () => {
    const kit = currentKit()
    const header = { version: 1, id: 'fork-1', createdAt: 1_700_000_000_000, parentSession: 'orig', seedLength: 0 }
    const writer = await kit.store.create(header, [])
    await writer.close()
    expect((await kit.another().read('fork-1')).header.forkedFrom).toBeUndefined()
    expect((await kit.another().list()).find((s) => s.id === 'fork-1')?.forkedFrom).toBeUndefined()
  })
})
