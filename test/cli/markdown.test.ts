import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { MarkdownStream, terminalMarkdown } from '../../src/cli/markdown.js'
import { plainScreen, startPty } from './pty.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const ANSWER = [
  '## Plan\n\nThis is **important** and uses `npm test`.\n\n',
  '1. first *step*\n\n2. second step\n\n',
  '```ts\nconst answer: number = 42\n  console.log(answer) // indented\n```\n',
  'Done.',
]

function workspace(): { home: string; root: string; script: string } {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  const script = join(home, 'script.json')
  // Streamed in small pieces, so blocks arrive split across deltas as they do from a real model.
  const pieces = ANSWER.join('').match(/[\s\S]{1,4}/g) ?? []
  writeFileSync(script, JSON.stringify([{ text: pieces }]))
  return { home, root, script }
}

/** The answer's lines on screen: between the opening lines and the footer. */
function answerLines(screen: string): string[] {
  const lines = screen.split('\n')
  const start = lines.findIndex((l) => l.includes('Plan'))
  const end = lines.findIndex((l) => l.startsWith('──'))
  return lines.slice(start, end)
}

describe('ISSUE-28 item 6: markdown in answers, on a terminal', () => {
  it('renders headings, emphasis, lists and inline code; code lines stay exactly as written, between fences, unboxed', async () => {
    const { home, root, script } = workspace()
    const pty = startPty(['run', '--script', script, '--root', root, 'plan it'], { env: cliEnv(home) })
    expect(await pty.exited()).toBe(0)
    const raw = pty.raw()
    // Emphasis became styles: bold and italic escapes around the words, no asterisks or backticks left.
    expect(raw).toMatch(/\x1b\[1mimportant\x1b\[22m/)
    expect(raw).toMatch(/\x1b\[3mstep\x1b\[23m/)
    const lines = answerLines(pty.screen())
    const text = lines.join('\n')
    expect(text).not.toContain('**')
    expect(text).toContain('This is important and uses npm test.')
    expect(lines).toContain('  1. first step')
    expect(lines).toContain('  2. second step')
    // Code: each line as the model wrote it (its own indent, no added one, no box characters), fenced with the language.
    const fence = lines.indexOf('```ts')
    expect(fence, text).toBeGreaterThanOrEqual(0)
    expect(lines[fence + 1]).toBe('const answer: number = 42')
    expect(lines[fence + 2]).toBe('  console.log(answer) // indented')
    expect(lines[fence + 3]).toBe('```')
    for (const line of lines.slice(fence, fence + 4)) expect(line).not.toMatch(/[│┃┌└─]/)
    expect(lines).toContain('Done.')
  }, 60_000)

  it('--raw, NO_COLOR and a pipe show the text exactly as the model wrote it', async () => {
    const { home, root, script } = workspace()
    const rawFlag = startPty(['run', '--script', script, '--root', root, '--raw', 'plan it'], { env: cliEnv(home) })
    expect(await rawFlag.exited()).toBe(0)
    expect(rawFlag.screen()).toContain('This is **important** and uses `npm test`.')
    const noColor = startPty(['run', '--script', script, '--root', root, 'plan it'], { env: cliEnv(home, { NO_COLOR: '1' }) })
    expect(await noColor.exited()).toBe(0)
    expect(noColor.screen()).toContain('```ts\nconst answer: number = 42')
    const piped = await runCli(['run', '--script', script, '--root', root, 'plan it'], { env: cliEnv(home) })
    expect(piped.code).toBe(0)
    expect(piped.stdout).toContain(ANSWER.join(''))
  }, 60_000)
})

describe('MarkdownStream: blocks render once complete, whatever the delta boundaries', () => {
  it('renders the same text for every split of the source, and a list split by a blank line stays one list', () => {
    const source = ANSWER.join('')
    const renderAll = (size: number): string => {
      const stream = new MarkdownStream(terminalMarkdown())
      let out = ''
      for (const piece of source.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []) out += stream.push(piece)
      return plainScreen(out + stream.end())
    }
    const whole = renderAll(source.length)
    for (const size of [1, 2, 3, 7, 16]) expect(renderAll(size)).toBe(whole)
    expect(whole).toContain('  1. first step\n  2. second step')
  })

  it('writes nothing for a block until it is complete, and a closed code fence at once', () => {
    const stream = new MarkdownStream(terminalMarkdown())
    expect(stream.push('A paragraph that\ngoes on\n')).toBe('')
    expect(plainScreen(stream.push('\n```sh\nls -la\n```\n'))).toBe('A paragraph that\ngoes on\n\n```sh\nls -la\n```\n')
  })
})
