import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
// tsx from this checkout: the snippet runs in an empty folder outside it.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/** The README's "Embed it" snippet, importing this checkout's sources instead of the package. */
function readmeSnippet(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const block = /Embed it:\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1]
  if (block === undefined) throw new Error("README.md has no 'Embed it' snippet")
  return block.replace(/from 'ledgerloop'/, `from ${JSON.stringify(join(root, 'src/index.ts'))}`)
}

describe("README's embed snippet", () => {
  it('without a key prints the failure and exits 1 (not an event log and 0)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'll-readme-'))
    try {
      writeFileSync(join(dir, 'snippet.mts'), readmeSnippet())
      const env = { ...process.env }
      delete env.DEEPSEEK_API_KEY
      const failed = await run(process.execPath, ['--import', tsx, 'snippet.mts'], { cwd: dir, env, timeout: 30_000 }).then(
        () => undefined,
        (error: { code?: number; stdout: string; stderr: string }) => error,
      )
      expect(failed?.code).toBe(1)
      expect(failed?.stdout).toBe('')
      expect(failed?.stderr).toContain('turn 1 ended error AUTH: no API key for deepseek')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
