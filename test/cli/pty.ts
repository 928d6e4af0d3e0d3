import { spawn } from 'node:child_process'
import { CLI } from './cli-process.js'

/** A CLI process on a real pseudo-terminal (util-linux `script`), driven like a person at a keyboard. */
export interface PtyCli {
  /** Everything the terminal showed so far, raw (ANSI codes included). */
  readonly raw: () => string
  /** The screen text with ANSI codes and carriage-return redraws removed. */
  readonly screen: () => string
  /** Types text (add `\r` for Enter, as a terminal sends it). */
  type(text: string): void
  /** Resolves once the screen shows `text` (or matches it). */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>
  /** Sends a signal to the CLI process itself (not to `script`). */
  signal(name: NodeJS.Signals): void
  /** Resolves with the CLI's exit code once it exits. */
  exited(timeoutMs?: number): Promise<number | null>
}

function quote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`
}

/** Removes ANSI escapes and the spinner's `\r`-redrawn lines, keeping what stays on screen. */
export function plainScreen(raw: string): string {
  const noAnsi = raw.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\x1b\][^\x07]*\x07/g, '')
  return noAnsi
    .split('\n')
    .map((line) => {
      const parts = line.replace(/\r$/, '').split('\r')
      return parts[parts.length - 1] ?? ''
    })
    .join('\n')
}

/**
 * Starts `ledgerloop ARGS` with stdin, stdout and stderr on a pseudo-terminal: `script -q -e -c CMD /dev/null`
 * runs CMD on a fresh pty and relays our pipe to it, so the CLI sees `isTTY` everywhere, exactly as in a terminal.
 * The terminal is sized 120×40 (a fresh pty has no size).
 */
export function startPty(args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd?: string }): PtyCli {
  const command = `stty cols 120 rows 40; echo "pid:$$"; exec ${[process.execPath, CLI, ...args].map(quote).join(' ')}`
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
    cwd: options.cwd,
    env: { TERM: 'xterm-256color', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let raw = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (raw += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (raw += d))
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const pid = (): number => {
    const match = /pid:(\d+)/.exec(raw)
    if (match === null) throw new Error('the pty has not started yet')
    return Number(match[1])
  }
  const screen = (): string => plainScreen(raw)
  return {
    raw: () => raw,
    screen,
    type(text) {
      child.stdin.write(text)
    },
    async waitFor(text, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs
      const seen = (): boolean => (typeof text === 'string' ? screen().includes(text) : text.test(screen()))
      while (!seen()) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`never saw ${String(text)} on the terminal:\n${screen()}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    },
    signal(name) {
      process.kill(pid(), name)
    },
    async exited(timeoutMs = 20_000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
      try {
        return await exit
      } finally {
        clearTimeout(timer)
        child.stdin.end()
      }
    },
  }
}
