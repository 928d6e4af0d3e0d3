import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { BASH_HEAD_BYTES, BASH_TAIL_BYTES, shellEnv } from '../../../src/tools/builtin/bash.js'
import { HeadTailCapture } from '../../../src/tools/builtin/output-capture.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

// Writes the shell's own pid (= its process group id) and two background sleepers' pids to `pids`, then waits.
const SLEEPERS = 'echo $$ > pids; sleep 30 & echo $! >> pids; sleep 30 & echo $! >> pids; wait'

const started: number[] = []
afterEach(() => {
  // Belt and braces: a failing test must not leave sleepers behind for the next one.
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone, which is the point
    }
  }
})

async function pidsIn(root: string, count: number): Promise<number[]> {
  const deadline = Date.now() + 5000
  for (;;) {
    const text = await readFile(path.join(root, 'pids'), 'utf8').catch(() => '')
    const pids = text.split('\n').filter(Boolean).map(Number)
    if (pids.length >= count) {
      started.push(...pids)
      return pids
    }
    if (Date.now() > deadline) throw new Error(`expected ${count} pids, got ${JSON.stringify(text)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** `pid`'s state letter from `ps` (`Z` = zombie: dead, waiting for init to reap it), or undefined when gone. */
function stateOf(pid: number): string | undefined {
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return undefined
  }
  return psRows().find((row) => row.pid === pid)?.stat
}

function psRows(): Array<{ pid: number; pgid: number; stat: string }> {
  return execFileSync('ps', ['-eo', 'pid=,pgid=,stat='], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [pid, pgid, stat] = line.trim().split(/\s+/)
      return { pid: Number(pid), pgid: Number(pgid), stat: stat ?? '' }
    })
}

/**
 * No recorded process and no member of the group is running. Orphaned zombies are tolerated: they are dead,
 * and this sandbox's init reaps them only every second or so.
 */
function expectNothingLeft(pids: number[]): void {
  const [leader] = pids as [number]
  for (const pid of pids) expect([undefined, 'Z'], `pid ${pid}`).toContain(stateOf(pid)?.[0])
  expect(psRows().filter((row) => row.pgid === leader && !row.stat.startsWith('Z'))).toEqual([])
}

describe('bash', () => {
  it('is only offered with shell: true', async () => {
    const root = await tempDir()
    expect(toolsFor(root).bash).toBeUndefined()
    expect(toolsFor(root, true).bash?.concurrencySafe).toBe(false)
  })

  it('runs in the workspace root and reports output (stdout and stderr) and exit code', async () => {
    const root = await tempDir()
    const text = okText(await call(toolsFor(root, true).bash, { command: 'pwd; echo oops >&2' }))
    expect(text).toBe(`${root}\noops\n\n[exit code 0]`)
  })

  it('turns a non-zero exit into an isError result the model reads, with output and code', async () => {
    const root = await tempDir()
    const result = await call(toolsFor(root, true).bash, { command: 'echo before; exit 3' })
    expect(result.kind).toBe('ok')
    if (result.kind !== 'ok') return
    expect(result.output).toMatchObject({ isError: true, errorCode: 'COMMAND_FAILED', meta: { exitCode: 3 } })
    expect(result.text).toBe('before\n\n[exit code 3]')
  })

  it('times out with TOOL_TIMEOUT, keeps the output so far, and leaves no process of the group behind', async () => {
    const root = await tempDir()
    const outcome = await call(toolsFor(root, true).bash, { command: `echo started; ${SLEEPERS}`, timeoutMs: 500 })
    const pids = await pidsIn(root, 3)
    const result = failure(outcome)
    expect(result.code).toBe('TOOL_TIMEOUT')
    expect(result.message).toContain('timed out after 500 ms')
    expect(result.message).toContain('started')
    expectNothingLeft(pids)
  })

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const root = await tempDir()
    const command = `trap '' TERM; ${SLEEPERS}`
    const before = Date.now()
    const outcome = await call(toolsFor(root, true).bash, { command, timeoutMs: 300 })
    const pids = await pidsIn(root, 3)
    expect(failure(outcome).code).toBe('TOOL_TIMEOUT')
    expect(Date.now() - before).toBeGreaterThanOrEqual(2000)
    expectNothingLeft(pids)
  })

  it('on cancel (ctx.signal) kills the whole process group and fails with ABORTED', async () => {
    const root = await tempDir()
    const controller = new AbortController()
    const pending = call(toolsFor(root, true).bash, { command: SLEEPERS }, controller.signal)
    const pids = await pidsIn(root, 3)
    for (const pid of pids) expect(stateOf(pid)).toMatch(/^[SR]/)
    controller.abort()
    const result = failure(await pending)
    expect(result.code).toBe('ABORTED')
    expectNothingLeft(pids)
  })

  it('does not start at all when already cancelled', async () => {
    const root = await tempDir()
    const controller = new AbortController()
    controller.abort()
    expect(failure(await call(toolsFor(root, true).bash, { command: 'touch ran' }, controller.signal)).code).toBe('ABORTED')
    await expect(readFile(path.join(root, 'ran'))).rejects.toThrow()
  })

  it('stops background jobs still running when the command exits, instead of hanging on their pipes', async () => {
    const root = await tempDir()
    const before = Date.now()
    const outcome = await call(toolsFor(root, true).bash, { command: 'echo $$ > pids; sleep 30 & echo $! >> pids; echo done' })
    const pids = await pidsIn(root, 2)
    expect(Date.now() - before).toBeLessThan(5000)
    expect(okText(outcome)).toBe('done\n\n[exit code 0; background processes still running when the command exited were stopped]')
    expectNothingLeft(pids)
  })

  it('does not claim to have stopped background jobs that already finished', async () => {
    const root = await tempDir()
    const text = okText(await call(toolsFor(root, true).bash, { command: '(exit 0) & sleep 0.1; echo done' }))
    expect(text).toBe('done\n\n[exit code 0]')
  })

  it('caps output at head + tail with a note of exactly how many bytes were cut', async () => {
    const root = await tempDir()
    const command = `printf 'START'; head -c 1000000 /dev/zero | tr '\\0' a; printf 'END'`
    const result = await call(toolsFor(root, true).bash, { command })
    const text = okText(result)
    const total = 5 + 1_000_000 + 3
    const cut = total - BASH_HEAD_BYTES - BASH_TAIL_BYTES
    expect(text.startsWith('START')).toBe(true)
    expect(text).toContain(`[… ${cut} bytes of output cut here …]`)
    expect(text.endsWith(`END\n\n[exit code 0; ${cut} bytes of output were cut from the middle]`)).toBe(true)
    expect(Buffer.byteLength(text)).toBeLessThan(BASH_HEAD_BYTES + BASH_TAIL_BYTES + 300)
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ cutBytes: cut })
  })

  it('keeps provider API keys out of the shell environment (they would land in the log)', async () => {
    const root = await tempDir()
    process.env.LEDGERLOOP_TEST_API_KEY = 'sk-do-not-leak'
    try {
      const text = okText(await call(toolsFor(root, true).bash, { command: 'env' }))
      expect(text).not.toContain('sk-do-not-leak')
      expect(text).toContain('PATH=')
    } finally {
      delete process.env.LEDGERLOOP_TEST_API_KEY
    }
    expect(shellEnv({ OPENAI_API_KEY: 'x', DEEPSEEK_APIKEY: 'y', HOME: '/h' })).toEqual({ HOME: '/h' })
  })

  it('validates timeoutMs before running', async () => {
    const root = await tempDir()
    expect((await call(toolsFor(root, true).bash, { command: 'true', timeoutMs: 0 })).kind).toBe('invalid')
    expect((await call(toolsFor(root, true).bash, { command: 'true', timeoutMs: 3_600_000 })).kind).toBe('invalid')
  })
})

describe('HeadTailCapture', () => {
  it('keeps everything under the cap and exactly head + tail above it, across many small chunks', () => {
    const small = new HeadTailCapture(4, 4)
    small.push(Buffer.from('abcdefgh'))
    expect(small.render()).toEqual({ text: 'abcdefgh', cutBytes: 0 })
    const big = new HeadTailCapture(3, 5)
    for (const char of 'abcdefghijklmnopqrstuvwxyz') big.push(Buffer.from(char))
    expect(big.render()).toEqual({ text: 'abc\n\n[… 18 bytes of output cut here …]\n\nvwxyz', cutBytes: 18 })
    expect(big.total).toBe(26)
  })
})
