import { mkdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { HarnessError } from '../../../src/errors/harness-error.js'
import { Workspace } from '../../../src/tools/builtin/workspace-path.js'
import { tempDir } from './helpers.js'

async function refusal(promise: Promise<unknown>): Promise<HarnessError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(HarnessError)
  return error as HarnessError
}

describe('Workspace.resolve', () => {
  it('resolves plain, nested, not-yet-existing and `a/../b` paths inside the root', async () => {
    const root = await tempDir()
    await mkdir(path.join(root, 'src'))
    const ws = new Workspace(root)
    expect(await ws.resolve('.')).toMatchObject({ real: root, rel: '.' })
    expect(await ws.resolve('src')).toMatchObject({ real: path.join(root, 'src'), rel: 'src' })
    expect(await ws.resolve('new/deep/file.txt')).toMatchObject({ rel: 'new/deep/file.txt' })
    expect(await ws.resolve('src/../other.txt')).toMatchObject({ rel: 'other.txt' })
  })

  it.each([
    ['../x', 'climbs out'],
    ['a/../../x', 'climbs out'],
    ['..', 'climbs out'],
    ['/etc/passwd', 'absolute'],
  ])('refuses %s with PATH_OUTSIDE_ROOT naming the path', async (given, why) => {
    const ws = new Workspace(await tempDir())
    const error = await refusal(ws.resolve(given))
    expect(error.code).toBe('PATH_OUTSIDE_ROOT')
    expect(error.message).toContain(JSON.stringify(given))
    expect(error.message).toContain(why)
  })

  it('refuses symlinks that lead outside: a file link, a directory link, a new file under it, a dangling link, a relative link', async () => {
    const root = await tempDir()
    const outside = await tempDir('ll-outside-')
    await writeFile(path.join(outside, 'secret.txt'), 'secret')
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'file-link'))
    await symlink(outside, path.join(root, 'dir-link'))
    await symlink(path.join(outside, 'not-yet.txt'), path.join(root, 'dangling'))
    await symlink(path.relative(root, outside), path.join(root, 'relative-link'))
    const ws = new Workspace(root)
    for (const given of ['file-link', 'dir-link', 'dir-link/secret.txt', 'dir-link/new/file.txt', 'dangling', 'relative-link/secret.txt']) {
      const error = await refusal(ws.resolve(given))
      expect(error.code, given).toBe('PATH_OUTSIDE_ROOT')
      expect(error.message).toContain('symlink')
    }
  })

  it('follows symlinks that stay inside the root to their real location', async () => {
    const root = await tempDir()
    await mkdir(path.join(root, 'real'))
    await symlink(path.join(root, 'real'), path.join(root, 'alias'))
    await symlink('real/missing.txt', path.join(root, 'dangling-inside'))
    const ws = new Workspace(root)
    expect(await ws.resolve('alias/x.txt')).toMatchObject({ real: path.join(root, 'real', 'x.txt'), rel: 'real/x.txt' })
    expect(await ws.resolve('dangling-inside')).toMatchObject({ rel: 'real/missing.txt' })
  })

  it('reports a symlink cycle as SYMLINK_LOOP, empty paths as INVALID_ARGS', async () => {
    const root = await tempDir()
    await symlink('b', path.join(root, 'a'))
    await symlink('a', path.join(root, 'b'))
    const ws = new Workspace(root)
    expect((await refusal(ws.resolve('a'))).code).toBe('SYMLINK_LOOP')
    expect((await refusal(ws.resolve(''))).code).toBe('INVALID_ARGS')
    expect((await refusal(ws.resolve('a\0b'))).code).toBe('INVALID_ARGS')
  })

  it('realpaths the root once, so a root reached through a symlink still confines', async () => {
    const base = await tempDir()
    await mkdir(path.join(base, 'project'))
    await symlink(path.join(base, 'project'), path.join(base, 'link-to-project'))
    const ws = new Workspace(path.join(base, 'link-to-project'))
    expect(ws.root).toBe(path.join(base, 'project'))
    expect((await ws.resolve('x.txt')).real).toBe(path.join(base, 'project', 'x.txt'))
  })

  it('rejects a missing root with INVALID_CONFIG', async () => {
    const root = await tempDir()
    expect(() => new Workspace(path.join(root, 'nope'))).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    await writeFile(path.join(root, 'file'), '')
    expect(() => new Workspace(path.join(root, 'file'))).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
  })
})
