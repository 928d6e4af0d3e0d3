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
