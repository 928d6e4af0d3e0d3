import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

/** A root with links out to a sibling directory holding a secret, and the sibling itself. */
async function escapeFixture() {
  const root = await tempDir()
  const outside = await tempDir('ll-outside-')
  await writeFile(path.join(outside, 'secret.txt'), 'TOP SECRET\n')
  await mkdir(path.join(root, 'a'))
  await symlink(path.join(outside, 'secret.txt'), path.join(root, 'secret-link'))
  await symlink(outside, path.join(root, 'outdir'))
  await symlink(path.join(outside, 'created-through-link.txt'), path.join(root, 'dangling'))
  return { root, outside, tools: toolsFor(root) }
}

const ESCAPES = ['../x', '/etc/passwd', 'a/../../x', 'secret-link', 'outdir', 'outdir/secret.txt', 'outdir/new.txt']

describe('every file tool refuses every escape with PATH_OUTSIDE_ROOT', () => {
  it.each(ESCAPES)('read_file %s', async (given) => {
    const { tools } = await escapeFixture()
    const result = failure(await call(tools.read_file, { path: given }))
    expect(result.code).toBe('PATH_OUTSIDE_ROOT')
    expect(result.message).toContain(JSON.stringify(given))
    expect(result.message).not.toContain('TOP SECRET')
  })

  it.each([...ESCAPES, 'dangling', 'outdir/deep/new.txt'])('write_file %s (and nothing is written outside)', async (given) => {
    const { tools, outside } = await escapeFixture()
    expect(failure(await call(tools.write_file, { path: given, content: 'pwned' })).code).toBe('PATH_OUTSIDE_ROOT')
    expect((await readdir(outside)).sort()).toEqual(['secret.txt'])
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n')
  })

  it.each(['../x', '/etc/passwd', 'secret-link', 'outdir/secret.txt'])('edit_file %s (and the target is unchanged)', async (given) => {
    const { tools, outside } = await escapeFixture()
    const result = await call(tools.edit_file, { path: given, oldText: 'TOP', newText: 'NOT' })
    expect(failure(result).code).toBe('PATH_OUTSIDE_ROOT')
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('TOP SECRET\n')
  })

  it.each(['..', '/etc', 'a/../..', 'outdir'])('list %s', async (given) => {
    const { tools } = await escapeFixture()
    const result = failure(await call(tools.list, { path: given }))
    expect(result.code).toBe('PATH_OUTSIDE_ROOT')
    expect(result.message).not.toContain('secret.txt')
  })

  it.each(['..', '/etc', 'outdir', 'secret-link'])('grep path %s', async (given) => {
    const { tools } = await escapeFixture()
    expect(failure(await call(tools.grep, { pattern: 'SECRET', path: given })).code).toBe('PATH_OUTSIDE_ROOT')
  })

  it.each(['../*', '/etc/*', 'a/../../*', 'outdir/*'])('glob %s', async (pattern) => {
    const { tools } = await escapeFixture()
    expect(failure(await call(tools.glob, { pattern })).code).toBe('PATH_OUTSIDE_ROOT')
  })

  it('searching the root does not follow links out of it', async () => {
    const { tools } = await escapeFixture()
    expect(okText(await call(tools.grep, { pattern: 'SECRET' }))).toMatch(/^No matches/)
    expect(okText(await call(tools.glob, { pattern: '**/*.txt' }))).toMatch(/^No files match/)
  })

  it('lists links as links without following them', async () => {
    const { tools } = await escapeFixture()
    expect(okText(await call(tools.list, {}))).toBe(['a/', 'dangling@', 'outdir@', 'secret-link@'].join('\n'))
  })
})

describe('links that stay inside the root keep working', () => {
  it('read, write, edit and list through a link to a directory or file inside the root', async () => {
    const root = await tempDir()
    await mkdir(path.join(root, 'real'))
    await writeFile(path.join(root, 'real', 'a.txt'), 'alpha\n')
    await symlink('real', path.join(root, 'alias'))
    await symlink('real/a.txt', path.join(root, 'a-link'))
    await symlink('real/created.txt', path.join(root, 'dangling-inside'))
    const tools = toolsFor(root)
    expect(okText(await call(tools.read_file, { path: 'alias/a.txt' }))).toBe('    1\talpha')
    expect(okText(await call(tools.read_file, { path: 'a-link' }))).toBe('    1\talpha')
    expect(okText(await call(tools.edit_file, { path: 'a-link', oldText: 'alpha', newText: 'beta' }))).toBe('Edited real/a.txt: replaced 1 occurrence at line 1')
    expect(okText(await call(tools.write_file, { path: 'alias/b.txt', content: 'b' }))).toBe('Created real/b.txt (1 bytes written)')
    expect(okText(await call(tools.write_file, { path: 'dangling-inside', content: 'c' }))).toBe('Created real/created.txt (1 bytes written)')
    expect(okText(await call(tools.list, { path: 'alias' }))).toBe('a.txt\nb.txt\ncreated.txt')
    expect(await readFile(path.join(root, 'real', 'a.txt'), 'utf8')).toBe('beta\n')
  })

  it('a link chain that ends outside is refused, however it winds', async () => {
    const { root, outside } = await escapeFixture()
    await symlink('outdir', path.join(root, 'hop1'))
    await symlink('a/../hop1', path.join(root, 'hop2'))
    await symlink('hop3', path.join(root, 'hop3-loop'))
    await symlink('hop3-loop', path.join(root, 'hop3'))
    const tools = toolsFor(root)
    expect(failure(await call(tools.read_file, { path: 'hop2/secret.txt' })).code).toBe('PATH_OUTSIDE_ROOT')
    expect(failure(await call(tools.write_file, { path: 'hop2/new.txt', content: 'x' })).code).toBe('PATH_OUTSIDE_ROOT')
    expect(failure(await call(tools.read_file, { path: 'hop3/x' })).code).toBe('SYMLINK_LOOP')
    expect((await readdir(outside)).sort()).toEqual(['secret.txt'])
  })
})
