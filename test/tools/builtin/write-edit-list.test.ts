import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { LIST_MAX_ENTRIES } from '../../../src/tools/builtin/list.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

describe('write_file', () => {
  it('creates parent directories and reports the bytes written', async () => {
    const root = await tempDir()
    const tools = toolsFor(root)
    const text = okText(await call(tools.write_file, { path: 'deep/er/new.txt', content: 'héllo\n' }))
    expect(text).toBe('Created deep/er/new.txt (7 bytes written)')
    expect(await readFile(path.join(root, 'deep/er/new.txt'), 'utf8')).toBe('héllo\n')
    expect(okText(await call(tools.write_file, { path: 'deep/er/new.txt', content: '' }))).toBe('Overwrote deep/er/new.txt (0 bytes written)')
    expect(tools.write_file?.concurrencySafe).toBe(false)
  })

  it('refuses to replace a directory', async () => {
    const root = await tempDir()
    await mkdir(path.join(root, 'd'))
    expect(failure(await call(toolsFor(root).write_file, { path: 'd', content: 'x' })).code).toBe('IS_A_DIRECTORY')
    expect(failure(await call(toolsFor(root).write_file, { path: '.', content: 'x' })).code).toBe('IS_A_DIRECTORY')
  })
})

describe('edit_file', () => {
  async function editing(content: string) {
    const root = await tempDir()
    await writeFile(path.join(root, 'f.ts'), content)
    const tools = toolsFor(root)
    return {
      edit: (oldText: string, newText: string) => call(tools.edit_file, { path: 'f.ts', oldText, newText }),
      read: () => readFile(path.join(root, 'f.ts'), 'utf8'),
    }
  }

  it('replaces the one exact match and says where', async () => {
    const file = await editing('const a = 1\nconst b = 2\n')
    expect(okText(await file.edit('const b = 2', 'const b = 3'))).toBe('Edited f.ts: replaced 1 occurrence at line 2')
    expect(await file.read()).toBe('const a = 1\nconst b = 3\n')
  })

  it('fails with EDIT_NO_MATCH on 0 matches and leaves the file alone', async () => {
    const file = await editing('const a = 1\n')
    const result = failure(await file.edit('const  a = 1', 'x'))
    expect(result.code).toBe('EDIT_NO_MATCH')
    expect(result.message).toContain('not found in "f.ts"')
    expect(await file.read()).toBe('const a = 1\n')
  })

  it('fails with EDIT_AMBIGUOUS on 2 matches, naming the count and lines, and asks for more context', async () => {
    const file = await editing('x = 1\ny = 2\nx = 1\n')
    const result = failure(await file.edit('x = 1', 'x = 9'))
    expect(result.code).toBe('EDIT_AMBIGUOUS')
    expect(result.message).toContain('occurs 2 times')
    expect(result.message).toContain('lines 1, 3')
    expect(result.message).toContain('add surrounding lines')
    expect(await file.read()).toBe('x = 1\ny = 2\nx = 1\n')
  })

  it('counts overlapping occurrences as ambiguous', async () => {
    const file = await editing('aaa')
    expect(failure(await file.edit('aa', 'b')).code).toBe('EDIT_AMBIGUOUS')
  })

  it('inserts newText literally (no $& or $1 expansion)', async () => {
    const file = await editing('price: X\n')
    okText(await file.edit('X', "$& and $1 and $$ and $'"))
    expect(await file.read()).toBe("price: $& and $1 and $$ and $'\n")
  })

  it('matches LF oldText against a CRLF file and keeps CRLF', async () => {
    const file = await editing('one\r\ntwo\r\nthree\r\n')
    okText(await file.edit('one\ntwo', 'uno\ndos'))
    expect(await file.read()).toBe('uno\r\ndos\r\nthree\r\n')
  })

  it('rejects empty oldText before running, and refuses binary and missing files', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'bin'), Buffer.from([1, 0, 2]))
    const tools = toolsFor(root)
    expect((await call(tools.edit_file, { path: 'f', oldText: '', newText: 'x' })).kind).toBe('invalid')
    expect(failure(await call(tools.edit_file, { path: 'bin', oldText: 'a', newText: 'b' })).code).toBe('BINARY_FILE')
    expect(failure(await call(tools.edit_file, { path: 'missing', oldText: 'a', newText: 'b' })).code).toBe('FILE_NOT_FOUND')
  })
})

describe('list', () => {
  it('lists entries sorted by name with directories marked /', async () => {
    const root = await tempDir()
    await mkdir(path.join(root, 'src'))
    await mkdir(path.join(root, '.git'))
    for (const name of ['b.txt', 'A.md', 'src/inner.ts']) await writeFile(path.join(root, name), '')
    const tools = toolsFor(root)
    expect(okText(await call(tools.list, {}))).toBe('.git/\nA.md\nb.txt\nsrc/')
    expect(okText(await call(tools.list, { path: 'src' }))).toBe('inner.ts')
    expect(okText(await call(tools.list, { path: 'src/../src' }))).toBe('inner.ts')
    expect(failure(await call(tools.list, { path: 'b.txt' })).code).toBe('NOT_A_DIRECTORY')
    expect(failure(await call(tools.list, { path: 'nope' })).code).toBe('FILE_NOT_FOUND')
  })

  it(`caps at ${LIST_MAX_ENTRIES} entries with a note of what was left out`, async () => {
    const root = await tempDir()
    await Promise.all(Array.from({ length: LIST_MAX_ENTRIES + 5 }, (_, i) => writeFile(path.join(root, `f${String(i).padStart(5, '0')}`), '')))
    const text = okText(await call(toolsFor(root).list, {}))
    const lines = text.split('\n')
    expect(lines[0]).toBe('f00000')
    expect(lines[LIST_MAX_ENTRIES - 1]).toBe(`f${String(LIST_MAX_ENTRIES - 1).padStart(5, '0')}`)
    expect(lines.at(-1)).toBe(`[5 more entries not shown; ${LIST_MAX_ENTRIES + 5} in total]`)
  })
})
