import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { READ_DEFAULT_LINES, READ_MAX_BYTES, READ_MAX_LINE_CHARS } from '../../../src/tools/builtin/read-file.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

function numbered(count: number, make: (n: number) => string = (n) => `line ${n}`): string {
  return Array.from({ length: count }, (_, i) => make(i + 1)).join('\n') + '\n'
}

async function fixture(files: Record<string, string | Buffer>) {
  const root = await tempDir()
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true })
    await writeFile(path.join(root, name), content)
  }
  return toolsFor(root)
}

describe('read_file', () => {
  it('prints the whole small file with right-aligned line numbers and a tab', async () => {
    const tools = await fixture({ 'a.txt': 'alpha\nbeta\r\ngamma' })
    expect(okText(await call(tools.read_file, { path: 'a.txt' }))).toBe('    1\talpha\n    2\tbeta\n    3\tgamma')
  })

  it('reads a range from a 1-based offset for limit lines and says where the file continues', async () => {
    const tools = await fixture({ 'n.txt': numbered(100) })
    const text = okText(await call(tools.read_file, { path: 'n.txt', offset: 10, limit: 3 }))
    expect(text).toBe('   10\tline 10\n   11\tline 11\n   12\tline 12\n\n[showing lines 10-12; the file continues — call read_file with offset=13 to read more]')
    expect(okText(await call(tools.read_file, { path: 'n.txt', offset: 99 }))).toBe('   99\tline 99\n  100\tline 100')
  })

  it('caps an unbounded read at the default line count with a note', async () => {
    const tools = await fixture({ 'big.txt': numbered(READ_DEFAULT_LINES + 500) })
    const result = await call(tools.read_file, { path: 'big.txt' })
    const lines = okText(result).split('\n')
    expect(lines[READ_DEFAULT_LINES - 1]).toBe(` ${READ_DEFAULT_LINES}\tline ${READ_DEFAULT_LINES}`)
    expect(lines.at(-1)).toContain(`offset=${READ_DEFAULT_LINES + 1}`)
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ from: 1, to: READ_DEFAULT_LINES, truncated: true })
  })

  it('caps output bytes even when the limit allows more lines', async () => {
    const tools = await fixture({ 'wide.txt': numbered(1500, (n) => `${n}:`.padEnd(1000, 'x')) })
    const text = okText(await call(tools.read_file, { path: 'wide.txt', limit: 1500 }))
    expect(Buffer.byteLength(text)).toBeLessThan(READ_MAX_BYTES + 2 * 1024)
    const shown = text.split('\n').filter((line) => /^\s*\d+\t/.test(line)).length
    expect(shown).toBeGreaterThan(200)
    expect(shown).toBeLessThan(300)
    expect(text).toContain(`stopped at the ${READ_MAX_BYTES / 1024} KiB output cap after line ${shown}`)
    expect(text).toContain(`offset=${shown + 1}`)
  })

  it('cuts over-long lines and says so', async () => {
    const tools = await fixture({ 'min.js': 'a'.repeat(READ_MAX_LINE_CHARS + 10) + '\nshort\n' })
    const text = okText(await call(tools.read_file, { path: 'min.js' }))
    expect(text).toContain('… [10 more characters]')
    expect(text).toContain('1 line(s) longer than')
  })

  it('refuses binary files, directories, missing files and offsets past the end with clear codes', async () => {
    const tools = await fixture({ 'img.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]), 'dir/x.txt': 'x\n', 'short.txt': 'one\ntwo\n' })
    const binary = failure(await call(tools.read_file, { path: 'img.png' }))
    expect(binary).toMatchObject({ code: 'BINARY_FILE' })
    expect(binary.message).toContain('binary')
    expect(failure(await call(tools.read_file, { path: 'dir' })).code).toBe('IS_A_DIRECTORY')
    expect(failure(await call(tools.read_file, { path: 'nope.txt' }))).toMatchObject({ code: 'FILE_NOT_FOUND', message: expect.stringContaining('"nope.txt"') })
    const past = failure(await call(tools.read_file, { path: 'short.txt', offset: 5 }))
    expect(past).toMatchObject({ code: 'INVALID_ARGS', message: expect.stringContaining('has 2 lines') })
  })

  it('says an empty file is empty, and rejects bad ranges before running', async () => {
    const tools = await fixture({ 'empty.txt': '' })
    expect(okText(await call(tools.read_file, { path: 'empty.txt' }))).toContain('empty')
    expect((await call(tools.read_file, { path: 'empty.txt', offset: 0 })).kind).toBe('invalid')
    expect((await call(tools.read_file, { path: 'empty.txt', limit: 1.5 })).kind).toBe('invalid')
  })

  it('is concurrency-safe', async () => {
    const tools = await fixture({})
    expect(tools.read_file?.concurrencySafe).toBe(true)
  })
})
