import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { mcpTools, permissionPlugin, verifySessionLog, type ToolSet } from '../../src/index.js'
import { loopFixture } from '../support/loop-fixture.js'
import { alive, fixtureServerScript, startHttpFixture, waitForCall, type HttpFixture } from './fixtures/mcp-fixture.js'

type ResultData = { message: { content: { type: 'tool-result'; content: { type: string; text?: string }[] }[] }; error?: { code: string } }

let script = ''
const cleanup: (() => Promise<void> | void)[] = []
beforeAll(async () => {
  script = await fixtureServerScript()
})
afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo()
})

function scratch(): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'll-mcp-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  return { dir, log: join(dir, 'calls.log') }
}

async function tools(options: Parameters<typeof mcpTools>[0]): Promise<ToolSet> {
  const set = await mcpTools(options)
  cleanup.push(() => set.close())
  return set
}

function results(f: Awaited<ReturnType<typeof loopFixture>>): { text: string; code: string | undefined; blocks: string[] }[] {
  return f.ofType('tool/result').map((e) => {
    const d = e.data as ResultData
    const blocks = d.message.content[0]?.content ?? []
    return { text: blocks[0]?.text ?? '', code: d.error?.code, blocks: blocks.map((b) => b.type) }
  })
}

const pidOf = (text: string): number => Number(/pid=(\d+)/.exec(text)?.[1])

describe('mcpTools', () => {
  it('MCP-STDIO: a spawned server’s two tools become mcp__<server>__<tool>, with its schemas, called by the agent', async () => {
    const { log } = scratch()
    const set = await tools({ servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } } } })
    expect(set.tools.map((t) => t.name).sort()).toEqual(['mcp__fx__add', 'mcp__fx__describe'])
    const add = set.tools.find((t) => t.name === 'mcp__fx__add')
    expect(add?.description).toBe('Adds two numbers')
    expect(add?.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] })
    expect(add?.parameters).not.toHaveProperty('$schema')

    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'c1', name: 'mcp__fx__add', arguments: { a: 2, b: 40 } },
            { id: 'c2', name: 'mcp__fx__describe', arguments: {} },
            { id: 'c3', name: 'mcp__fx__add', arguments: { a: 'two', b: 1 } },
            { id: 'c4', name: 'mcp__fx__describe', arguments: { fail: true } },
          ],
        },
        { text: 'done' },
      ],
      { tools: set.tools },
    )
    f.agent.followup('use the server')
    await f.agent.whenIdle()
    const [sum, who, bad, failed] = results(f)
    expect(sum).toEqual({ text: '42', code: undefined, blocks: ['text'] })
    expect(who?.text).toMatch(/^pid=\d+ calls=2$/)
    expect(who?.blocks).toEqual(['text', 'image']) // the server's image content arrives as an image block
    // Validated here against the server's schema: the bad call never reached the server.
    expect(bad?.code).toBe('INVALID_ARGS')
    expect(failed).toMatchObject({ text: 'asked to fail', code: 'MCP_TOOL_ERROR' })
    expect(f.errors).toEqual([])
    expect(verifySessionLog(f.agent.session.events).problems).toEqual([])
    const pid = pidOf(who?.text ?? '')
    expect(alive(pid)).toBe(true)
    await set.close()
    expect(alive(pid)).toBe(false) // close() ends the spawned server
  })

  it('MCP-RESTART: a server killed mid-call gives a tool error; the next call restarts it and works', async () => {
    const { log } = scratch()
    const set = await tools({
      servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } } },
      restart: { baseDelayMs: 50 },
    })
    const f = await loopFixture(
      [
        { toolCalls: [{ id: 'c1', name: 'mcp__fx__describe', arguments: {} }] },
        { toolCalls: [{ id: 'c2', name: 'mcp__fx__describe', arguments: { delayMs: 30_000 } }] },
        { toolCalls: [{ id: 'c3', name: 'mcp__fx__describe', arguments: {} }] },
        { text: 'done' },
      ],
      { tools: set.tools },
    )
    f.agent.followup('go')
    const first = await waitForCall(log, 'describe', 1)
    const inFlight = await waitForCall(log, 'describe', 2)
    expect(inFlight).toBe(first)
    process.kill(inFlight, 'SIGKILL')
    await f.agent.whenIdle()
    const [before, crashed, after] = results(f)
    expect(pidOf(before?.text ?? '')).toBe(first)
    expect(crashed?.code).toBe('MCP_SERVER_UNAVAILABLE')
    expect(crashed?.text).toMatch(/^Error: MCP server 'fx' went away during 'describe'/)
    const restarted = pidOf(after?.text ?? '')
    expect(after?.code).toBeUndefined()
    expect(restarted).not.toBe(first)
    expect(alive(restarted)).toBe(true)
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
  })

  it('MCP-TIMEOUT: a call past timeoutMs is TOOL_TIMEOUT and the hung server is replaced', async () => {
    const { log } = scratch()
    const set = await tools({
      servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } } },
      timeoutMs: 1_000,
      restart: { baseDelayMs: 50 },
    })
    const f = await loopFixture(
      [
        { toolCalls: [{ id: 'c1', name: 'mcp__fx__describe', arguments: { delayMs: 60_000 } }] },
        { toolCalls: [{ id: 'c2', name: 'mcp__fx__describe', arguments: {} }] },
        { text: 'done' },
      ],
      { tools: set.tools },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    const hung = await waitForCall(log, 'describe', 1)
    const [timedOut, after] = results(f)
    expect(timedOut?.code).toBe('TOOL_TIMEOUT')
    expect(after?.code).toBeUndefined()
    expect(pidOf(after?.text ?? '')).not.toBe(hung)
    expect(alive(hung)).toBe(false) // the hung process was ended, not leaked
  })

  it('MCP-HTTP: a streamable HTTP server’s tools work; killed mid-call it is a tool error, and after it comes back the next call works', async () => {
    const { log } = scratch()
    let server: HttpFixture = await startHttpFixture(0, { MCP_FIXTURE_LOG: log })
    cleanup.push(() => server.kill())
    const set = await tools({ servers: { web: { url: server.url, headers: { 'x-test': '1' } } }, restart: { baseDelayMs: 50 } })
    expect(set.tools.map((t) => t.name).sort()).toEqual(['mcp__web__add', 'mcp__web__describe'])
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'c1', name: 'mcp__web__add', arguments: { a: 1, b: 2 } },
            { id: 'c2', name: 'mcp__web__describe', arguments: {} },
          ],
        },
        { toolCalls: [{ id: 'c3', name: 'mcp__web__describe', arguments: { delayMs: 30_000 } }] },
        { toolCalls: [{ id: 'c4', name: 'mcp__web__describe', arguments: {} }] },
        { text: 'done' },
      ],
      { tools: set.tools },
    )
    // The model's third request waits until the server is back, so the restart is what is being tested.
    let release: () => void = () => undefined
    const back = new Promise<void>((r) => (release = r))
    f.harness.hooks.on('tools/pre-execute', async ({ call }, next) => {
      if (call.callId === 'c4') await back
      return next()
    })
    f.agent.followup('go')
    await waitForCall(log, 'describe', 2)
    await server.kill()
    server = await startHttpFixture(server.port, { MCP_FIXTURE_LOG: log })
    release()
    await f.agent.whenIdle()
    const [sum, who, crashed, after] = results(f)
    expect(sum?.text).toBe('3')
    expect(who?.text).toMatch(/^pid=\d+/)
    expect(crashed?.code).toBe('MCP_SERVER_UNAVAILABLE')
    expect(after?.code).toBeUndefined()
    expect(pidOf(after?.text ?? '')).toBe(server.process.pid)
  })

  it('MCP-CANCEL: cancelling the turn during a call ends the call, not the server', async () => {
    const { log } = scratch()
    const set = await tools({ servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } } } })
    const f = await loopFixture(
      [
        { toolCalls: [{ id: 'c1', name: 'mcp__fx__describe', arguments: { delayMs: 30_000 } }] },
        { toolCalls: [{ id: 'c2', name: 'mcp__fx__describe', arguments: {} }] },
        { text: 'done' },
      ],
      { tools: set.tools },
    )
    f.agent.followup('go')
    const pid = await waitForCall(log, 'describe', 1)
    f.agent.cancel()
    await f.agent.whenIdle()
    f.agent.followup('again')
    await f.agent.whenIdle()
    const [cancelled, after] = results(f)
    expect(cancelled?.code).toBe('ABORTED')
    expect(after?.code).toBeUndefined()
    expect(pidOf(after?.text ?? '')).toBe(pid) // same process: a cancel is not a crash
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }, { kind: 'completed' }])
  })

  it('MCP-PERMISSION: rules name a whole server with mcp__<server>__*', async () => {
    const { log } = scratch()
    const set = await tools({ servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } } } })
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'c1', name: 'mcp__fx__add', arguments: { a: 1, b: 1 } },
            { id: 'c2', name: 'mcp__fx__describe', arguments: {} },
          ],
        },
        { text: 'done' },
      ],
      { tools: set.tools, plugins: [permissionPlugin({ rules: { allow: ['mcp__fx__*'], deny: ['mcp__fx__describe'] } })] },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    const decisions = f.ofType('permission/decision').map((e) => e.data)
    expect(decisions).toEqual([
      { turn: 1, step: 1, callId: 'c1', tool: 'mcp__fx__add', decision: 'allow', by: 'rule', rule: 'mcp__fx__*' },
      { turn: 1, step: 1, callId: 'c2', tool: 'mcp__fx__describe', decision: 'deny', by: 'rule', rule: 'mcp__fx__describe' },
    ])
    expect(results(f).map((r) => r.code)).toEqual([undefined, 'TOOL_DENIED'])
  })

  it('bad configs and unstartable servers are clear errors', async () => {
    await expect(mcpTools({ servers: { 'bad name': { command: 'x' } } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(mcpTools({ servers: { a: { url: 'ftp://x' } } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(mcpTools({ servers: { a: {} as never } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(
      mcpTools({ servers: { ok: { command: process.execPath, args: [script, 'stdio'] }, broken: { command: '/nonexistent/mcp-server' } } }),
    ).rejects.toMatchObject({ code: 'MCP_SERVER_UNAVAILABLE', message: expect.stringContaining("'broken'") })
  })

  it('a server listing a tool with an uncompilable schema is INVALID_TOOL naming the tool, and what was started is stopped', async () => {
    const { log } = scratch()
    const failure = mcpTools({
      servers: { fx: { command: process.execPath, args: [script, 'stdio'], env: { MCP_FIXTURE_LOG: log } }, bad: { command: process.execPath, args: [script, 'bad-schema'] } },
    })
    await expect(failure).rejects.toMatchObject({ code: 'INVALID_TOOL', message: expect.stringContaining('mcp__bad__broken') })
    const healthy = await waitForCall(log, 'start', 1)
    expect(alive(healthy)).toBe(false)
  })
})
