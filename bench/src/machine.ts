// What the benchmark ran on, and the versions it ran.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { cpus, freemem, loadavg, platform, release, totalmem } from 'node:os'
import { join } from 'node:path'

export interface MachineInfo {
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly freeMemoryGiB: number
  readonly os: string
  /** 1-minute load average when the run started: other work on the machine shows up here. */
  readonly loadAtStart: number
}

export function machineInfo(): MachineInfo {
  const list = cpus()
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()}`,
    loadAtStart: Math.round(loadavg()[0]! * 100) / 100,
  }
}

export function binaryVersion(binary: string): string | undefined {
  try {
    return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim()
  } catch {
    return undefined
  }
}

/** Installed version of an npm package under `root`'s node_modules. */
export function installedVersion(root: string, pkg: string): string | undefined {
  const file = join(root, 'node_modules', pkg, 'package.json')
  if (!existsSync(file)) return undefined
  return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version
}

export function currentLoad(): number {
  return Math.round(loadavg()[0]! * 100) / 100
}
