import { mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach } from 'vitest'
import { HarnessError } from '../../../src/errors/harness-error.js'
import { normalizeToolOutput, type DefinedTool } from '../../../src/tools/define-tool.js'
import { builtinTools, type BuiltinToolsOptions } from '../../../src/tools/builtin/index.js'
import type { ToolOutput } from '../../../src/tools/types.js'

/** What one tool call came to, the way the loop would see it. */
export type CallResult =
  | { kind: 'ok'; output: ToolOutput; text: string }
  | { kind: 'invalid'; problems: string[] }
  | { kind: 'error'; code: string; message: string }

const cleanups: string[] = []

afterEach(async () => {
  for (const dir of cleanups.splice(0)) await rm(dir, { recursive: true, force: true })
})

/** A fresh real temp directory (realpath'd: macOS and some CI put tmp behind a symlink), removed after the test. */
export async function tempDir(prefix = 'll-tools-'): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)))
  cleanups.push(dir)
  return dir
}

/** The built-in tools over `root`, by name (the sandbox is the default, as for users). */
export function toolsFor(root: string, shell = false, options: Omit<BuiltinToolsOptions, 'root' | 'shell'> = {}): Record<string, DefinedTool> {
  return Object.fromEntries(builtinTools({ root, shell, ...options }).map((tool) => [tool.name, tool]))
}

/** Calls a tool through `validate` then `execute` with a real AbortController, as the loop does. */
export async function call(tool: DefinedTool | undefined, args: unknown, signal: AbortSignal = new AbortController().signal): Promise<CallResult> {
  if (tool === undefined) throw new Error('no such tool')
  const checked = tool.validate(args)
  if (!checked.ok) return { kind: 'invalid', problems: checked.problems }
  try {
    const output = normalizeToolOutput(await tool.execute(checked.value, { signal, callId: 'call-1', agent: { id: 'agent-1' }, idempotencyKey: 'key-1' }))
    return { kind: 'ok', output, text: typeof output.content === 'string' ? output.content : JSON.stringify(output.content) }
  } catch (error) {
    if (error instanceof HarnessError) return { kind: 'error', code: error.code, message: error.message }
    throw error
  }
}

/** The text of a successful call; fails the test with the error otherwise. */
export function okText(result: CallResult): string {
  if (result.kind !== 'ok') throw new Error(`expected success, got ${JSON.stringify(result)}`)
  return result.text
}

/** The error code and message of a failed call; fails the test on success. */
export function failure(result: CallResult): { code: string; message: string } {
  if (result.kind !== 'error') throw new Error(`expected a tool error, got ${JSON.stringify(result)}`)
  return result
}
