// Loading the MCP reference servers' tool schemas prints nothing: the standard JSON Schema formats are known.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { mcpTools, type DefinedTool, type ToolSet } from '../../src/index.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { EVERYTHING, startEverythingHttp } from './fixtures/mcp-reference.js'

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo()
})

/** Everything written through console.warn/console.error or straight to process.stderr while `body` runs. */
async function printedDuring(body: () => Promise<void>): Promise<string[]> {
  const printed: string[] = []
  const keep = (...args: unknown[]): void => void printed.push(args.map(String).join(' '))
  const warn = vi.spyOn(console, 'warn').mockImplementation(keep)
  const error = vi.spyOn(console, 'error').mockImplementation(keep)
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    printed.push(String(chunk))
    return true
  })
  try {
    await body()
  } finally {
    warn.mockRestore()
    error.mockRestore()
    stderr.mockRestore()
  }
  return printed
}

async function load(options: Parameters<typeof mcpTools>[0]): Promise<ToolSet> {
  const set = await mcpTools(options)
  cleanup.push(() => set.close())
  return set
}

describe('MCP-FORMATS: server-everything’s schemas load without warnings', () => {
  it('over stdio: nothing is printed, and `format: "uri"` is checked, not ignored', async () => {
    let set: ToolSet | undefined
    // On main: `unknown format "uri" ignored in schema at path "#/properties/data"`, through console.warn.
    const printed = await printedDuring(async () => {
      set = await load({ servers: { ev: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } })
    })
    expect(printed).toEqual([])
    // MCP tools are built with defineTool, so each carries its compiled validator.
    const gzip = set?.tools.find((t) => t.name === 'mcp__ev__gzip-file-as-resource') as DefinedTool | undefined
    expect(gzip?.schema.parameters).toMatchObject({ properties: { data: { format: 'uri' } } })
    expect(gzip?.validate({ name: 'a.gz', data: 'not a url' })).toEqual({ ok: false, problems: ['/data: must match format "uri"'] })
    expect(gzip?.validate({ name: 'a.gz', data: 'data:text/plain;base64,aGk=' })).toMatchObject({ ok: true })
  })

  it('over streamable HTTP: nothing is printed', async () => {
    const server = await startEverythingHttp()
    cleanup.push(() => server.stop())
    let count = 0
    const printed = await printedDuring(async () => {
      count = (await load({ servers: { ev: { url: server.url } } })).tools.length
    })
    expect(count).toBeGreaterThan(5)
    expect(printed).toEqual([])
  })
})

describe('MCP-FORMATS-CLI: `ledgerloop tools` with server-everything configured', () => {
  beforeAll(() => ensureBuilt(), 120_000)

  it('lists its tools and prints nothing on stderr', async () => {
    const home = tempHome()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ mcpServers: { ev: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } }))
    const run = await runCli(['tools', '--json'], { env: cliEnv(home), timeoutMs: 60_000 })
    expect(run.code).toBe(0)
    const rows = JSON.parse(run.stdout) as { name: string }[]
    expect(rows.map((r) => r.name)).toContain('mcp__ev__gzip-file-as-resource')
    expect(run.stderr).toBe('') // on main 2 lines of `unknown format "uri" ignored`
  })
})
