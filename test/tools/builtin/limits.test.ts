import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { builtinTools } from '../../../src/tools/builtin/index.js'
import { DEFAULT_TOOL_LIMITS } from '../../../src/tools/builtin/limits.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

describe('tool limits', () => {
  it('have documented defaults', () => {
    expect(DEFAULT_TOOL_LIMITS).toEqual({
      maxFileBytes: 10 * 1024 * 1024,
      maxWriteBytes: 10 * 1024 * 1024,
      maxFilesWalked: 100_000,
      grepTimeoutMs: 10_000,
      maxProcesses: 256,
    })
  })

  it('refuse bad values and unknown names with INVALID_CONFIG', async () => {
    const root = await tempDir()
    expect(() => builtinTools({ root, limits: { maxFileBytes: 0 } })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    expect(() => builtinTools({ root, limits: { maxFileBytes: 1.5 } })).toThrow(/positive integer/)
    expect(() => builtinTools({ root, limits: { maxFiles: 3 } as never })).toThrow(/unknown tool limit "maxFiles"/)
    expect(() => builtinTools({ root, sandbox: 'docker' as never })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
  })

  it('read_file and edit_file refuse a file over maxFileBytes with FILE_TOO_LARGE naming the setting', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'big.txt'), 'x'.repeat(2000))
    const tools = toolsFor(root, false, { limits: { maxFileBytes: 1000 } })
    const read = failure(await call(tools.read_file, { path: 'big.txt' }))
    expect(read.code).toBe('FILE_TOO_LARGE')
    expect(read.message).toContain('limits.maxFileBytes')
    expect(failure(await call(tools.edit_file, { path: 'big.txt', oldText: 'x', newText: 'y' })).code).toBe('FILE_TOO_LARGE')
    expect(await readFile(path.join(root, 'big.txt'), 'utf8')).toBe('x'.repeat(2000))
  })

  it('write_file and edit_file refuse content over maxWriteBytes and write nothing', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'small.txt'), 'abc\n')
    const tools = toolsFor(root, false, { limits: { maxWriteBytes: 100 } })
    const write = failure(await call(tools.write_file, { path: 'new.txt', content: 'y'.repeat(101) }))
    expect(write.code).toBe('FILE_TOO_LARGE')
    expect(write.message).toContain('limits.maxWriteBytes')
    expect(existsSync(path.join(root, 'new.txt'))).toBe(false)
    expect(failure(await call(tools.edit_file, { path: 'small.txt', oldText: 'abc', newText: 'z'.repeat(200) })).code).toBe('FILE_TOO_LARGE')
    expect(await readFile(path.join(root, 'small.txt'), 'utf8')).toBe('abc\n')
    expect(okText(await call(tools.write_file, { path: 'ok.txt', content: 'y'.repeat(100) }))).toBe('Created ok.txt (100 bytes written)')
  })

  it('grep skips files over maxFileBytes and says so', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'big.txt'), `needle ${'x'.repeat(2000)}\n`)
    await writeFile(path.join(root, 'small.txt'), 'needle\n')
    const text = okText(await call(toolsFor(root, false, { limits: { maxFileBytes: 1000 } }).grep, { pattern: 'needle' }))
    expect(text).toBe('small.txt:1: needle\n\n[1 file(s) larger than 1000 bytes (limits.maxFileBytes) were not searched]')
  })

  it('glob and grep stop walking at maxFilesWalked and say so', async () => {
    const root = await tempDir()
    for (let i = 0; i < 30; i++) await writeFile(path.join(root, `f${String(i).padStart(2, '0')}.txt`), 'needle\n')
    const tools = toolsFor(root, false, { limits: { maxFilesWalked: 10 } })
    const glob = okText(await call(tools.glob, { pattern: '*.txt' }))
    expect(glob.split('\n').filter((line) => line.endsWith('.txt'))).toHaveLength(10)
    expect(glob).toContain('[the search stopped after looking at 10 files (limits.maxFilesWalked)]')
    const grep = okText(await call(tools.grep, { pattern: 'needle' }))
    expect(grep.split('\n').filter((line) => line.includes(':1: needle'))).toHaveLength(10)
    expect(grep).toContain('the search stopped after looking at 10 files (limits.maxFilesWalked)')
  })

  it('binary files are refused by read_file and edit_file with BINARY_FILE, and skipped by grep', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'blob.bin'), Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0, 1, 2]))
    const tools = toolsFor(root)
    expect(failure(await call(tools.read_file, { path: 'blob.bin' })).code).toBe('BINARY_FILE')
    expect(failure(await call(tools.edit_file, { path: 'blob.bin', oldText: 'needle', newText: 'x' })).code).toBe('BINARY_FILE')
    expect(okText(await call(tools.grep, { pattern: 'needle' }))).toMatch(/^No matches/)
  })

  it('a FIFO is refused at once instead of blocking the read or the write', async () => {
    const root = await tempDir()
    execFileSync('mkfifo', [path.join(root, 'pipe')])
    const tools = toolsFor(root)
    expect(failure(await call(tools.read_file, { path: 'pipe' })).code).toBe('NOT_A_FILE')
    expect(failure(await call(tools.edit_file, { path: 'pipe', oldText: 'a', newText: 'b' })).code).toMatch(/NOT_A_FILE|FS_ERROR/)
    expect((await call(tools.write_file, { path: 'pipe', content: 'x' })).kind).toBe('error')
  })
})
