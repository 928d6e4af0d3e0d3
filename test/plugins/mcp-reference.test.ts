// MCP against the published reference servers (pinned dev dependencies), not against servers we wrote.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { mcpTools, type ToolSet } from '../../src/index.js'
import { chatCompletionsMessages, type ChatCompletionsDialect } from '../../src/llm/adapters/chat-completions-request.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { McpServerConnection } from '../../src/plugins/mcp/connection.js'
import { loopFixture } from '../support/loop-fixture.js'
import { EVERYTHING, FILESYSTEM, WIRE_TAP, startEverythingHttp } from './fixtures/mcp-reference.js'

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo()
})

const everything = { command: process.execPath, args: [EVERYTHING, 'stdio'] }
const timing = { startupTimeoutMs: 15_000, callTimeoutMs: 2_000, restartBaseDelayMs: 50, restartMaxDelayMs: 1_000 }

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'll-mcp-ref-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function tools(options: Parameters<typeof mcpTools>[0]): Promise<ToolSet> {
  const set = await mcpTools(options)
  cleanup.push(() => set.close())
  return set
}

/** The JSON-RPC messages the client wrote, as the wire tap logged them. */
function sent(log: string): { id?: number; method?: string; params?: { requestId?: number; reason?: unknown; name?: string } }[] {
  let text = ''
  try {
    text = readFileSync(log, 'utf8')
  } catch {
    return []
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as ReturnType<typeof sent>[number])
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('MCP against server-everything (stdio)', () => {
  it('a task-only tool is not offered, and a refusal by the SDK says the client refused', async () => {
    const set = await tools({ servers: { ev: everything } })
    const names = set.tools.map((t) => t.name)
    expect(names).toContain('mcp__ev__echo')
    expect(names).not.toContain('mcp__ev__simulate-research-query') // execution.taskSupport: "required"

    const connection = new McpServerConnection('ev', everything, timing)
    cleanup.push(() => connection.close())
    const listed = await connection.start()
    expect(listed.map((t) => t.name)).not.toContain('simulate-research-query')
    const refused = connection.call('simulate-research-query', { topic: 'x' }, new AbortController().signal)
    await expect(refused).rejects.toMatchObject({ code: 'MCP_CALL_FAILED', message: expect.stringMatching(/^the MCP client \(not server 'ev'\) refused 'simulate-research-query'/) })
  })

  it('timeoutMs is kept: TOOL_TIMEOUT at the deadline, the hung server shut down in the background', async () => {
    const connection = new McpServerConnection('ev', everything, timing)
    cleanup.push(() => connection.close())
    await connection.start()
    const started = Date.now()
    const call = connection.call('trigger-long-running-operation', { duration: 30, steps: 1 }, new AbortController().signal)
    await expect(call).rejects.toMatchObject({ code: 'TOOL_TIMEOUT' })
    const elapsed = Date.now() - started
    expect(elapsed).toBeGreaterThanOrEqual(1_990)
    expect(elapsed).toBeLessThan(2_600) // on main 4011–4021 ms: the answer waited for the shutdown
    // The next call gets a fresh server.
    await expect(connection.call('echo', { message: 'hi' }, new AbortController().signal)).resolves.toMatchObject({ content: [{ type: 'text', text: 'Echo: hi' }] })
  })

  it('a call that reports progress outlives timeoutMs: the timeout restarts at each progress notification', async () => {
    const connection = new McpServerConnection('ev', everything, { ...timing, callTimeoutMs: 1_000 })
    cleanup.push(() => connection.close())
    await connection.start()
    // 2.4 s in all, a progress notification every 0.4 s: past the 1 s timeout only because progress extends it.
    const result = await connection.call('trigger-long-running-operation', { duration: 2.4, steps: 6 }, new AbortController().signal)
    expect(result.content).toEqual([{ type: 'text', text: expect.stringContaining('Long running operation completed') }])
  })

  /** Runs `steps` against server-everything behind the wire tap, cancels once the long call is sent, returns the wire. */
  async function cancelDuringLongCall(before: { id: string; name: string; arguments: Record<string, unknown> }[][]): Promise<ReturnType<typeof sent>> {
    const log = join(scratch(), 'wire.log')
    const set = await tools({ servers: { ev: { command: process.execPath, args: [WIRE_TAP, ...everything.args], env: { MCP_TAP_LOG: log } } } })
    const f = await loopFixture(
      [...before.map((toolCalls) => ({ toolCalls })), { toolCalls: [{ id: 'long', name: 'mcp__ev__trigger-long-running-operation', arguments: { duration: 30, steps: 1 } }] }, { text: 'not reached' }],
      { tools: set.tools },
    )
    f.agent.followup('go')
    await until(() => sent(log).some((m) => m.params?.name === 'trigger-long-running-operation'), 'the long call')
    f.agent.cancel()
    await f.agent.whenIdle()
    await until(() => sent(log).some((m) => m.method === 'notifications/cancelled'), 'the cancellation')
    await new Promise((r) => setTimeout(r, 100)) // a stray late notification would land by now
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    return sent(log)
  }

  it('cancelling a turn sends notifications/cancelled with a string reason', async () => {
    const wire = await cancelDuringLongCall([])
    const cancelled = wire.filter((m) => m.method === 'notifications/cancelled')
    expect(cancelled.map((m) => typeof m.params?.reason)).toEqual(['string']) // on main "[object Object]"
    expect(cancelled[0]?.params?.reason).not.toBe('[object Object]')
  })

  it('cancelling a turn cancels only the request still in flight, not one already answered', async () => {
    const wire = await cancelDuringLongCall([[{ id: 'e1', name: 'mcp__ev__echo', arguments: { message: 'answered' } }]])
    const long = wire.find((m) => m.params?.name === 'trigger-long-running-operation')
    const cancelled = wire.filter((m) => m.method === 'notifications/cancelled')
    expect(cancelled.map((m) => m.params?.requestId)).toEqual([long?.id]) // on main also the answered echo
  })

  it('eleven calls in one turn leave no abort listener behind (no MaxListenersExceededWarning)', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error): void => void warnings.push(w)
    process.on('warning', onWarning)
    cleanup.push(() => void process.off('warning', onWarning))
    const set = await tools({ servers: { ev: everything } })
    const echoes = Array.from({ length: 11 }, (_, i) => ({ id: `e${i}`, name: 'mcp__ev__echo', arguments: { message: `m${i}` } }))
    const f = await loopFixture([{ toolCalls: echoes.slice(0, 6) }, { toolCalls: echoes.slice(6) }, { text: 'done' }], { tools: set.tools })
    f.agent.followup('go')
    await f.agent.whenIdle()
    await new Promise((r) => setTimeout(r, 50)) // warnings are emitted on a later tick
    expect(f.ofType('tool/result')).toHaveLength(11)
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([])
  })
})

describe('MCP against server-everything (streamable HTTP)', () => {
  it('tools work over HTTP, and close() terminates the session (DELETE)', async () => {
    const server = await startEverythingHttp()
    cleanup.push(() => server.stop())
    const set = await mcpTools({ servers: { web: { url: server.url } } })
    cleanup.push(() => set.close())
    const f = await loopFixture([{ toolCalls: [{ id: 'c1', name: 'mcp__web__echo', arguments: { message: 'over http' } }] }, { text: 'done' }], { tools: set.tools })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(JSON.stringify(f.ofType('tool/result')[0]?.data)).toContain('Echo: over http')
    expect(server.stdout()).not.toMatch(/session termination request/)
    await set.close()
    await until(() => /Received session termination request/.test(server.stdout()), 'the DELETE')
  })
})

describe('MCP against server-filesystem (stdio)', () => {
  it('an image read by the server reaches an OpenAI-compatible model as an image_url part with its data: URL', async () => {
    const dir = scratch()
    // A 1x1 PNG.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64')
    writeFileSync(join(dir, 'dot.png'), png)
    const set = await tools({ servers: { fs: { command: process.execPath, args: [FILESYSTEM, dir] } } })
    const requests: GenerateOptions[] = []
    const f = await loopFixture(
      (request, index) => {
        requests.push(request)
        return index === 0 ? { toolCalls: [{ id: 'c1', name: 'mcp__fs__read_media_file', arguments: { path: join(dir, 'dot.png') } }] } : { text: 'a dot' }
      },
      { tools: set.tools },
    )
    f.agent.followup('what is in dot.png?')
    await f.agent.whenIdle()
    expect(f.errors).toEqual([])
    const second = requests[1]
    if (second === undefined) throw new Error('the model was not asked again')
    const dialect: ChatCompletionsDialect = { maxTokensField: 'max_tokens', reasoningHistoryField: false, streamUsage: true, reasoningParams: () => ({ fields: {}, temperatureApplies: true }) }
    const wire = JSON.stringify(chatCompletionsMessages(second, dialect))
    expect(wire).not.toContain('not sent')
    expect(wire).toContain(`"image_url":{"url":"data:image/png;base64,${png.toString('base64')}"}`)
  })
})
