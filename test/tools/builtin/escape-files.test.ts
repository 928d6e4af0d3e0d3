import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { builtinTools, createUserMessage } from '../../../src/index.js'
import { call, failure, okText, tempDir, toolsFor, type CallResult } from './helpers.js'
import { loopFixture } from '../../support/loop-fixture.js'
import { requireSystemTool } from '../../support/system-tools.js'

// One test here runs a real bash escape in the sandbox; it skips without a working bubblewrap (not under CI=true).
const sandbox = requireSystemTool('bubblewrap', import.meta.url)

// The file-tool half of the escape suite (issue 16): a symlink swapped in between check and use, a regex
// that backtracks forever, and a missing sandbox.

// Swaps, as fast as it can until `stop` appears, two things inside the workspace:
// - `d`: a real directory (holding file.txt) <-> a symlink to the outside directory; the old path check saw a
//   directory and then opened `d/file.txt` by path, which by then could lead outside;
// - `e`: a symlink to the inside directory `real` <-> a symlink to the outside directory (atomic rename).
// Tools may create `d` themselves in the instant it is missing; such a stray is removed and the swap retried.
// Prints the number of completed swaps every 500 and when it stops.
const SWAPPER = `
const fs = require('node:fs'), path = require('node:path')
const [ws, outside] = process.argv.slice(1)
const at = (name) => path.join(ws, name)
const retry = (fn) => {
  for (let i = 0; ; i++) {
    try { return fn() } catch (error) {
      if (i > 1000) throw error
      try { fs.rmSync(at('d'), { recursive: true, force: true }) } catch {}
    }
  }
}
const pause = new Int32Array(new SharedArrayBuffer(4))
let swaps = 0
for (;;) {
  if (swaps % 100 === 0 && fs.existsSync(at('stop'))) break
  fs.symlinkSync(outside, at('.tmp-d'))
  fs.renameSync(at('d'), at('.stash'))
  retry(() => fs.renameSync(at('.tmp-d'), at('d')))
  fs.symlinkSync(outside, at('.tmp-e'))
  fs.renameSync(at('.tmp-e'), at('e'))
  // Both states are held for a moment, so the tools meet each of them often.
  Atomics.wait(pause, 0, 0, 0.05)
  fs.renameSync(at('d'), at('.old-d'))
  fs.unlinkSync(at('.old-d'))
  retry(() => fs.renameSync(at('.stash'), at('d')))
  fs.symlinkSync('real', at('.tmp-e'))
  fs.renameSync(at('.tmp-e'), at('e'))
  // A short pause per swap leaves the tools some CPU on a small shared machine; it is still ~10k swaps/s.
  Atomics.wait(pause, 0, 0, 0.05)
  if (++swaps % 500 === 0) process.stdout.write(swaps + '\\n')
}
process.stdout.write(swaps + '\\n')
`

const SWAPS = 10_000
// Tool calls made while the swaps run (each sees whichever state the swapper left).
const CALLS = 2_000
const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

describe('file tools against a symlink swapped in a tight loop', () => {
  it(`read_file, write_file, edit_file, list, glob and grep never touch the outside while d and e are swapped ${SWAPS} times (${CALLS}+ calls)`, async () => {
    const root = await tempDir()
    const outside = await tempDir('ll-outside-')
    await writeFile(path.join(outside, 'file.txt'), 'OUTSIDE-SECRET INSIDE\n')
    await writeFile(path.join(outside, 'outside-only-name.txt'), 'OUTSIDE-SECRET\n')
    const outsideBefore = await snapshot(outside)
    await mkdir(path.join(root, 'd'))
    await writeFile(path.join(root, 'd', 'file.txt'), 'INSIDE\n')
    await mkdir(path.join(root, 'real'))
    await writeFile(path.join(root, 'real', 'file.txt'), 'INSIDE\n')
    await symlink('real', path.join(root, 'e'))

    const swapper = spawn(process.execPath, ['-e', SWAPPER, root, outside], { stdio: ['ignore', 'pipe', 'inherit'] })
    children.push(swapper)
    let swapped = 0
    swapper.stdout?.on('data', (chunk: Buffer) => (swapped = Math.max(swapped, ...chunk.toString().trim().split('\n').map(Number))))
    const swapperDone = new Promise<number | null>((resolve) => swapper.once('exit', resolve))

    const tools = toolsFor(root)
    const seen = new Map<string, number>()
    const leaks: string[] = []
    const note = (what: string, result: CallResult): void => {
      const key = result.kind === 'ok' ? `${what}:ok` : result.kind === 'error' ? `${what}:${result.code}` : `${what}:invalid`
      seen.set(key, (seen.get(key) ?? 0) + 1)
      const text = result.kind === 'ok' ? result.text : result.kind === 'error' ? result.message : ''
      if (/OUTSIDE-SECRET|outside-only-name/.test(text)) leaks.push(`${what}: ${text}`)
    }
    let calls = 0
    // Both sides go on until each has done its share: SWAPS swaps and CALLS tool calls.
    for (let i = 0; (calls < CALLS || swapped < SWAPS) && swapper.exitCode === null; i++) {
      const dir = i % 2 === 0 ? 'd' : 'e'
      note('read', await call(tools.read_file, { path: `${dir}/file.txt` }))
      note('write', await call(tools.write_file, { path: `${dir}/new-${i % 7}.txt`, content: `written ${i}\n` }))
      note('edit', await call(tools.edit_file, { path: `${dir}/file.txt`, oldText: 'INSIDE', newText: 'INSIDE' }))
      note('list', await call(tools.list, { path: dir }))
      calls += 4
      if (i % 10 === 0) {
        note('glob', await call(tools.glob, { pattern: `${dir}/**` }))
        calls++
      }
      if (i % 100 === 0) {
        note('grep', await call(tools.grep, { pattern: 'SECRET|INSIDE', path: dir }))
        calls++
      }
    }
    await writeFile(path.join(root, 'stop'), '')
    expect(await swapperDone).toBe(0)

    expect(leaks).toEqual([])
    expect(await snapshot(outside)).toEqual(outsideBefore)
    // The race really happened: the swapper kept going for as long as the calls ran, and the calls met both
    // the inside (success) and the swapped-in link (refusal).
    expect(swapped).toBeGreaterThanOrEqual(SWAPS)
    expect(seen.get('read:ok') ?? 0).toBeGreaterThan(0)
    expect(seen.get('read:PATH_OUTSIDE_ROOT') ?? 0).toBeGreaterThan(0)
    expect(seen.get('write:PATH_OUTSIDE_ROOT') ?? 0).toBeGreaterThan(0)
    // Every call ended in a result the model can read: success or a clear error code, never a crash. A
    // directory swapped for the link between its lookup and its no-follow open answers ELOOP, which the tools
    // report as SYMLINK_LOOP (seen rarely, under load): a refusal like the others.
    for (const key of seen.keys()) expect(key).toMatch(/:(ok|PATH_OUTSIDE_ROOT|FILE_NOT_FOUND|NOT_A_DIRECTORY|IS_A_DIRECTORY|SYMLINK_LOOP)$/)
  }, 120_000)
})

describe('grep cannot hang the loop', () => {
  // (a+)+$ against "aaaa…a!" backtracks through 2^n ways to split the a's before failing: hours at n = 40.
  const CATASTROPHIC = '(a+)+$'
  const LONG_LINE = `${'a'.repeat(40)}!\n`

  it('runs (a+)+$ on a long line into TOOL_TIMEOUT while the event loop keeps ticking, then grep works again', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'evil.txt'), LONG_LINE)
    await writeFile(path.join(root, 'fine.txt'), 'needle\n')
    const tools = toolsFor(root, false, { limits: { grepTimeoutMs: 1000 } })
    let ticks = 0
    const ticker = setInterval(() => ticks++, 50)
    const result = failure(await call(tools.grep, { pattern: CATASTROPHIC }))
    clearInterval(ticker)
    expect(result.code).toBe('TOOL_TIMEOUT')
    expect(result.message).toMatch(/1000 ms budget \(limits\.grepTimeoutMs\).*backtracks/)
    // The main thread was free the whole time (a blocked loop would not tick at all).
    expect(ticks).toBeGreaterThanOrEqual(5)
    expect(okText(await call(tools.grep, { pattern: 'needle' }))).toBe('fine.txt:1: needle')
  })

  it('is stopped by cancelling the turn (ABORTED), not left running', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'evil.txt'), LONG_LINE)
    const tools = toolsFor(root)
    const controller = new AbortController()
    const pending = call(tools.grep, { pattern: CATASTROPHIC }, controller.signal)
    setTimeout(() => controller.abort(), 300)
    expect(failure(await pending).code).toBe('ABORTED')
  })

  it.skipIf(sandbox.skip)('in a real turn: a timed-out grep and a refused bash escape are tool errors the model reads; the turn completes', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'evil.txt'), LONG_LINE)
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'g', name: 'grep', arguments: { pattern: CATASTROPHIC } },
            { id: 'b', name: 'bash', arguments: { command: 'echo pwned > /etc/ll-escape-turn' } },
            { id: 'l', name: 'list', arguments: {} },
          ],
        },
        { text: 'done' },
      ],
      { tools: builtinTools({ root, shell: true, limits: { grepTimeoutMs: 500 } }) },
    )
    f.agent.followup(createUserMessage('search'))
    await f.agent.whenIdle()
    const results = f.ofType('tool/result').map((event) => event.data as { error?: { code: string }; message: { content: Array<{ isError?: boolean; content: Array<{ text: string }> }> } })
    expect(results.map((r) => r.error?.code)).toEqual(['TOOL_TIMEOUT', 'COMMAND_FAILED', undefined])
    const bash = results[1]?.message.content[0]
    expect(bash?.isError).toBe(true)
    expect(bash?.content[0]?.text).toMatch(/Read-only file system/)
    expect(existsSync('/etc/ll-escape-turn')).toBe(false)
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
  })
})

describe('bash without bubblewrap', () => {
  const before = process.env.PATH
  afterEach(() => {
    process.env.PATH = before
  })

  it('refuses with SANDBOX_UNAVAILABLE naming both fixes, runs nothing, and the other tools still work', async () => {
    const root = await tempDir()
    await writeFile(path.join(root, 'a.txt'), 'hello\n')
    // bash itself stays reachable by absolute path; only bwrap is hidden.
    process.env.PATH = '/nonexistent-ll-bin'
    const tools = toolsFor(root, true)
    const result = failure(await call(tools.bash, { command: 'touch ran' }))
    expect(result.code).toBe('SANDBOX_UNAVAILABLE')
    expect(result.message).toContain('bwrap (bubblewrap) was not found on PATH')
    expect(result.message).toMatch(/install bubblewrap/)
    expect(result.message).toContain("sandbox: 'off'")
    expect((await readdir(root)).sort()).toEqual(['a.txt'])
    expect(okText(await call(tools.read_file, { path: 'a.txt' }))).toBe('    1\thello')
    expect(okText(await call(tools.write_file, { path: 'b.txt', content: 'x' }))).toMatch(/^Created b.txt/)
    expect(okText(await call(tools.grep, { pattern: 'hello' }))).toBe('a.txt:1: hello')
    expect(okText(await call(tools.glob, { pattern: '*.txt' }))).toBe('a.txt\nb.txt')
  })

  it('refuses when bwrap is there but cannot start a sandbox, quoting why', async () => {
    const root = await tempDir()
    const bin = await tempDir('ll-fake-bwrap-')
    await writeFile(path.join(bin, 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n', { mode: 0o755 })
    process.env.PATH = `${bin}:${before ?? ''}`
    const result = failure(await call(toolsFor(root, true).bash, { command: 'touch ran' }))
    expect(result.code).toBe('SANDBOX_UNAVAILABLE')
    expect(result.message).toContain('No permissions to create new namespace')
    expect(await readdir(root)).toEqual([])
  })

  it("runs on the host only when sandbox: 'off' is chosen explicitly", async () => {
    const root = await tempDir()
    process.env.PATH = `/nonexistent-ll-bin:${before ?? ''}`
    const result = await call(toolsFor(root, true, { sandbox: 'off' }).bash, { command: 'echo host' })
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ sandbox: 'off' })
  })
})

/** Names, contents and modification times of a directory's files: what "unchanged" means. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {}
  for (const name of (await readdir(dir)).sort()) {
    const file = path.join(dir, name)
    result[name] = `${await readFile(file, 'utf8')} @${(await stat(file)).mtimeMs}`
  }
  return result
}
