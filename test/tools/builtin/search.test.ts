import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { compileGlob, staticPrefix } from '../../../src/tools/builtin/glob-pattern.js'
import { GLOB_MAX_RESULTS } from '../../../src/tools/builtin/glob.js'
import { GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES } from '../../../src/tools/builtin/grep.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

async function project(files: Record<string, string | Buffer>) {
  const root = await tempDir()
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true })
    await writeFile(path.join(root, name), content)
  }
  return toolsFor(root)
}

const SAMPLE = {
  'README.md': 'TODO: write docs\n',
  'src/a.ts': 'export const a = 1\n// TODO fix a\n',
  'src/deep/b.ts': 'const b = 2 // todo lower\n// TODO fix b\n',
  'src/c.js': '// TODO js\n',
  '.git/config': 'TODO in git\n',
  'node_modules/pkg/index.js': '// TODO in deps\n',
  'logo.bin': Buffer.from('TODO\0binary'),
}

describe('grep', () => {
  it('prints file:line: text for matches in sorted path order, skipping .git, node_modules and binaries', async () => {
    const tools = await project(SAMPLE)
    expect(okText(await call(tools.grep, { pattern: 'TODO' }))).toBe(
      ['README.md:1: TODO: write docs', 'src/a.ts:2: // TODO fix a', 'src/c.js:1: // TODO js', 'src/deep/b.ts:2: // TODO fix b'].join('\n'),
    )
  })

  it('narrows by path (directory or file) and glob (name at any depth, or a path glob)', async () => {
    const tools = await project(SAMPLE)
    expect(okText(await call(tools.grep, { pattern: 'TODO', path: 'src/deep' }))).toBe('src/deep/b.ts:2: // TODO fix b')
    expect(okText(await call(tools.grep, { pattern: 'TODO', path: 'src/a.ts' }))).toBe('src/a.ts:2: // TODO fix a')
    expect(okText(await call(tools.grep, { pattern: 'TODO', glob: '*.ts' }))).toBe('src/a.ts:2: // TODO fix a\nsrc/deep/b.ts:2: // TODO fix b')
    expect(okText(await call(tools.grep, { pattern: 'TODO', glob: 'src/*.{js,md}' }))).toBe('src/c.js:1: // TODO js')
    expect(okText(await call(tools.grep, { pattern: '(?:todo|TODO) lower', path: 'src' }))).toBe('src/deep/b.ts:1: const b = 2 // todo lower')
  })

  it('says when nothing matched (not an error)', async () => {
    const tools = await project(SAMPLE)
    const result = await call(tools.grep, { pattern: 'nothing-like-this' })
    expect(okText(result)).toMatch(/^No matches for "nothing-like-this" in \. \(4 files searched\)/)
  })

  it('fails an invalid regex with INVALID_PATTERN, naming it', async () => {
    const tools = await project(SAMPLE)
    const result = failure(await call(tools.grep, { pattern: 'foo(' }))
    expect(result.code).toBe('INVALID_PATTERN')
    expect(result.message).toContain('"foo("')
  })

  it(`stops at ${GREP_MAX_MATCHES} matches with a note and cuts long lines`, async () => {
    const many = Array.from({ length: GREP_MAX_MATCHES + 50 }, (_, i) => `hit ${i}`).join('\n')
    const tools = await project({ 'many.txt': many, 'z-long.txt': `hit ${'x'.repeat(GREP_MAX_LINE_CHARS * 2)}` })
    const text = okText(await call(tools.grep, { pattern: 'hit' }))
    const lines = text.split('\n')
    expect(lines.filter((line) => line.startsWith('many.txt:'))).toHaveLength(GREP_MAX_MATCHES)
    expect(lines.at(-1)).toBe(`[stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob to see the rest]`)
    const long = okText(await call(tools.grep, { pattern: 'hit', path: 'z-long.txt' }))
    expect(long.length).toBeLessThan(GREP_MAX_LINE_CHARS + 100)
    expect(long).toContain('more characters]')
  })

  it('does not report a phantom empty last line', async () => {
    const tools = await project({ 'a.txt': 'x\n' })
    expect(okText(await call(tools.grep, { pattern: '^$' }))).toMatch(/^No matches/)
  })

  it('stops with ABORTED when the turn is cancelled', async () => {
    const tools = await project(SAMPLE)
    const controller = new AbortController()
    controller.abort()
    expect(failure(await call(tools.grep, { pattern: 'TODO' }, controller.signal)).code).toBe('ABORTED')
  })
})

describe('glob', () => {
  it('lists matching files sorted, with ** across directories and * within one', async () => {
    const tools = await project(SAMPLE)
    expect(okText(await call(tools.glob, { pattern: '**/*.ts' }))).toBe('src/a.ts\nsrc/deep/b.ts')
    expect(okText(await call(tools.glob, { pattern: 'src/*.ts' }))).toBe('src/a.ts')
    expect(okText(await call(tools.glob, { pattern: '*.md' }))).toBe('README.md')
    expect(okText(await call(tools.glob, { pattern: './src/**' }))).toBe('src/a.ts\nsrc/c.js\nsrc/deep/b.ts')
    expect(okText(await call(tools.glob, { pattern: 'src/?.{js,ts}' }))).toBe('src/a.ts\nsrc/c.js')
    expect(okText(await call(tools.glob, { pattern: '**/*.js' }))).toBe('src/c.js')
    expect(okText(await call(tools.glob, { pattern: 'node_modules/**/*.js' }))).toBe('node_modules/pkg/index.js')
    expect(okText(await call(tools.glob, { pattern: 'nope/**' }))).toBe('No files match "nope/**"')
  })

  it(`caps at ${GLOB_MAX_RESULTS} paths with a note`, async () => {
    const root = await tempDir()
    await Promise.all(Array.from({ length: GLOB_MAX_RESULTS + 7 }, (_, i) => writeFile(path.join(root, `f${String(i).padStart(5, '0')}.txt`), '')))
    const lines = okText(await call(toolsFor(root).glob, { pattern: '*.txt' })).split('\n')
    expect(lines[0]).toBe('f00000.txt')
    expect(lines[GLOB_MAX_RESULTS - 1]).toBe(`f${String(GLOB_MAX_RESULTS - 1).padStart(5, '0')}.txt`)
    expect(lines.at(-1)).toBe(`[showing ${GLOB_MAX_RESULTS} of ${GLOB_MAX_RESULTS + 7} matches; narrow the pattern to see the rest]`)
  })

  it('fails a malformed class with INVALID_PATTERN', async () => {
    const tools = await project({})
    expect(failure(await call(tools.glob, { pattern: '[z-a]*' })).code).toBe('INVALID_PATTERN')
  })
})

describe('compileGlob (picomatch)', () => {
  const cases: Array<[string, string[], string[]]> = [
    ['*.ts', ['a.ts', '.hidden.ts'], ['src/a.ts', 'a.tsx']],
    ['src/**/*.ts', ['src/a.ts', 'src/x/y/a.ts'], ['a.ts', 'srcx/a.ts']],
    ['**', ['a', 'a/b/c'], []],
    ['src/**', ['src/a', 'src/a/b'], ['other/a', 'srcx/a']],
    ['a?c', ['abc'], ['a/c', 'ac']],
    ['[ab]x', ['ax', 'bx'], ['cx']],
    ['[!ab]x', ['cx'], ['ax', '/x']],
    ['{a,b/{c,d}}.md', ['a.md', 'b/c.md', 'b/d.md'], ['b.md']],
    ['{x}.md', ['{x}.md'], ['x.md']],
    ['f\\(1\\)+.txt', ['f(1)+.txt'], ['f1.txt']],
    ['(a|b).md', ['a.md', 'b.md'], ['(a|b).md']],
    ['\\*.md', ['*.md'], ['a.md']],
    ['.github/**/*.yml', ['.github/workflows/ci.yml'], ['github/ci.yml']],
    ['file{1..3}.txt', ['file1.txt', 'file3.txt'], ['file4.txt']],
    ['src/!(*.test).ts', ['src/a.ts'], ['src/a.test.ts']],
  ]
  it.each(cases)('%s', (glob, yes, no) => {
    const matches = compileGlob(glob)
    for (const p of yes) expect(matches(p), p).toBe(true)
    for (const p of no) expect(matches(p), p).toBe(false)
  })

  it('finds the fixed directory a walk can start from', () => {
    expect(staticPrefix('src/lib/**/*.ts')).toBe('src/lib')
    expect(staticPrefix('*.ts')).toBe('')
    expect(staticPrefix('src/a.ts')).toBe('src')
    expect(staticPrefix('s*/a.ts')).toBe('')
  })

  it('compiles brace sets without expanding them (no blow-up on many sets)', () => {
    expect(compileGlob('{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}')('abababababab')).toBe(true)
  })
})
