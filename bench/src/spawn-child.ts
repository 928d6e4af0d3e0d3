// Start one child process for one (config, N) run and read its result line.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import type { BenchConfig, Runtime } from './configs.ts'
import { RESULT_PREFIX, type ChildResult } from './protocol.ts'

export interface ChildOptions {
  readonly benchDir: string
  readonly nodeBinary: Record<Runtime, string>
  readonly steps: number
  readonly warmupMs: number
  readonly warmupSteps: number
  readonly timeoutMs: number
  readonly runIndex: number
}

export function runChild(config: BenchConfig, options: ChildOptions): Promise<ChildResult> {
  const { benchDir } = options
  const args = [
    '--expose-gc',
    join(benchDir, '.build/child.mjs'),
    '--driver', join(benchDir, config.driver),
    '--variant', config.variant,
    '--steps', String(options.steps),
    '--warmup-ms', String(options.warmupMs),
    '--warmup-total', String(options.warmupSteps),
    '--tmp', join(benchDir, '.tmp', `${config.id}-${options.steps}-${options.runIndex}`),
    ...(config.childArgs ?? []),
  ]
  return new Promise((resolve) => {
    const child = spawn(options.nodeBinary[config.runtime], args, {
      cwd: benchDir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_ENV: 'production' },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX))
      if (line) {
        resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as ChildResult)
        return
      }
      const why = signal === 'SIGKILL' ? `killed after ${options.timeoutMs / 1000} s timeout` : `exited ${code ?? signal} without a result`
      const tail = stderr.trim().split('\n').slice(-4).join(' | ')
      resolve({ ok: false, stage: 'process', error: tail ? `${why}: ${tail}` : why })
    })
  })
}
