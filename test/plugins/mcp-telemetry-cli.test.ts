import { createServer } from 'node:http'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { fixtureServerScript } from './fixtures/mcp-fixture.js'

/** A loopback OTLP/HTTP receiver keeping the span names it gets. */
async function receiver(): Promise<{ url: string; names: string[]; close(): Promise<void> }> {
  const names: string[] = []
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (d: string) => (text += d))
    req.on('end', () => {
      const body = JSON.parse(text) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] }
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) names.push(s.name)
      res.writeHead(200).end('{}')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const address = server.address()
  return { url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`, names, close: () => new Promise((r) => server.close(() => r())) }
}

describe('CLI: mcpServers and --otlp', () => {
  let script = ''
  beforeAll(async () => {
    ensureBuilt()
    script = await fixtureServerScript()
  }, 120_000)

  it('MCP-CLI: run gets the config file’s MCP tools (allowed by a server-wide rule) and --otlp exports the turn’s spans', async () => {
    const home = tempHome()
    const otlp = await receiver()
    try {
      writeFileSync(
        join(home, 'config.json'),
        JSON.stringify({
          mcpServers: {
            fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: '${FIXTURE_LOG}' } },
            gone: { command: '/nonexistent/server' },
            off: { command: '/nonexistent/other', disabled: true },
          },
          permissions: { allow: ['mcp__fx__*'] },
        }),
      )
      const root = join(home, 'work')
      mkdirSync(root)
      const steps = join(home, 'script.json')
      writeFileSync(steps, JSON.stringify([{ toolCalls: [{ id: 'c1', name: 'mcp__fx__add', arguments: { a: 40, b: 2 } }] }, { text: 'The sum is 42.' }]))
      const run = await runCli(['run', '--script', steps, '--root', root, '--json', '--otlp', otlp.url, 'add them'], {
        env: cliEnv(home, { FIXTURE_LOG: join(home, 'calls.log') }),
        timeoutMs: 60_000,
      })
      expect(run.code).toBe(0)
      expect(run.stderr).toContain("MCP server 'gone' is not available")
      expect(run.stderr).not.toContain("'off'")
      const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data: { message?: { content: { content: { text: string }[] }[] }; error?: unknown } })
      const result = events.find((e) => e.type === 'tool/result')
      expect(result?.data.error).toBeUndefined()
      expect(result?.data.message?.content[0]?.content[0]?.text).toBe('42')
      expect(otlp.names.sort()).toEqual(['chat scripted', 'chat scripted', 'execute_tool mcp__fx__add', 'invoke_agent ledgerloop'].sort())
    } finally {
      await otlp.close()
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('MCP-TOOLS: `ledgerloop tools` lists the MCP servers\' tools with the rule that decides them, and stops the servers', async () => {
    const home = tempHome()
    try {
      writeFileSync(
        join(home, 'config.json'),
        JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [script, 'stdio'] } }, permissions: { allow: ['mcp__fx__*'] } }),
      )
      const run = await runCli(['tools', '--json'], { env: cliEnv(home), timeoutMs: 60_000 })
      expect(run.code).toBe(0)
      const rows = JSON.parse(run.stdout) as { name: string; permission: string; rule: string }[]
      expect(rows.filter((r) => r.name.startsWith('mcp__')).map((r) => [r.name, r.permission, r.rule])).toEqual([
        ['mcp__fx__add', 'allow', 'config: mcp__fx__*'],
        ['mcp__fx__describe', 'allow', 'config: mcp__fx__*'],
      ])
      expect(rows.some((r) => r.name === 'read_file')).toBe(true)
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it('a bad mcpServers entry is a usage error naming the field', async () => {
    const home = tempHome()
    try {
      writeFileSync(join(home, 'config.json'), JSON.stringify({ mcpServers: { fx: { type: 'sse', url: 'http://127.0.0.1:1/sse' } } }))
      const run = await runCli(['run', '--script', '/dev/null', 'x'], { env: cliEnv(home) })
      expect(run.code).toBe(2)
      expect(run.stderr).toContain('mcpServers.fx')
      expect(run.stderr).toContain('SSE transport is not supported')
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })
})
