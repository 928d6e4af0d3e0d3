import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RequestError, type SessionNotification, type ToolCallUpdate } from '@agentclientprotocol/sdk'
import { beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { PermissionDecisionData } from '../../src/plugins/permission.js'
import type { SessionEvent } from '../../src/session/events.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { fixtureServerScript } from '../plugins/fixtures/mcp-fixture.js'
import { choose, chunkText, startAcp, type AcpProcess } from './acp-process.js'

let fixture = ''
beforeAll(async () => {
  ensureBuilt()
  fixture = await fixtureServerScript()
}, 120_000)

/** The JSON-RPC error a request was answered with (fails the test when it succeeded). */
async function rpcError(request: Promise<unknown>): Promise<{ code: number; message: string; data?: unknown }> {
  try {
    await request
  } catch (error) {
    if (error instanceof RequestError) return { code: error.code, message: error.message, data: error.data }
    throw error
  }
  throw new Error('the request succeeded')
}

function updatesOf(acp: AcpProcess, sessionId: string, from = 0): SessionNotification['update'][] {
  return acp.updates.slice(from).filter((n) => n.sessionId === sessionId).map((n) => n.update)
}

function toolUpdates(acp: AcpProcess, sessionId: string, callId: string, from = 0): (ToolCallUpdate & { sessionUpdate: string })[] {
  return updatesOf(acp, sessionId, from).filter((u) => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId === callId) as (ToolCallUpdate & { sessionUpdate: string })[]
}

function decisions(events: readonly SessionEvent[]): PermissionDecisionData[] {
  return events.filter((e) => e.type === 'permission/decision').map((e) => e.data as unknown as PermissionDecisionData)
}

describe('ledgerloop acp', () => {
  it('ACP-STDIO: initialize, new, prompts with reasoning, text and permission asks (allow, reject), cancel mid-stream and during a question, load, list, resume, close; every log verifies', async () => {
    const home = tempHome()
    const rootA = join(home, 'project-a')
    const rootB = join(home, 'project-b')
    mkdirSync(rootA)
    mkdirSync(rootB)
    writeFileSync(join(rootA, 'notes.txt'), 'hello world\n')
    const script = join(home, 'script.json')
    const slow = Array.from({ length: 40 }, (_, i) => `part${i} `)
    writeFileSync(
      script,
      JSON.stringify([
        // A, prompt 1: reasoning, text and a write the user allows.
        { reasoning: ['Thinking ', 'it over.'], text: ["I'll write ", 'a.txt.'], toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'a.txt', content: 'one\n' } }] },
        { text: 'Written.' },
        // A, prompt 2: an edit the user rejects.
        { toolCalls: [{ id: 'e1', name: 'edit_file', arguments: { path: 'notes.txt', oldText: 'world', newText: 'there' } }] },
        { text: 'Left it alone.' },
        // A, prompt 3: cancelled mid-stream.
        { text: slow, delayMs: 100 },
        // A, prompt 4: the session goes on after the cancel.
        { text: 'Back again.' },
        // A, prompt 5: cancelled while the permission question is open.
        { toolCalls: [{ id: 'w2', name: 'write_file', arguments: { path: 'b.txt', content: 'never' } }] },
        // B, prompt 1: a tool of the MCP server the client passed (with its env), allowed always.
        { toolCalls: [{ id: 'm1', name: 'mcp__fx__add', arguments: { a: 40, b: 2 } }] },
        { text: 'The sum is 42.' },
        // B, after resume.
        { text: 'Still here.' },
      ]),
    )
    const mcpLog = join(home, 'mcp-calls.log')
    const acp = startAcp(['--script', script], cliEnv(home))
    const agent = acp.connection.agent
    try {
      // Before initialize nothing else is served.
      expect((await rpcError(agent.request('session/list', {}))).code).toBe(-32600)
      const init = await agent.request('initialize', { protocolVersion: 7, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } })
      // An unsupported version gets the one we speak.
      expect(init.protocolVersion).toBe(1)
      expect(init.agentCapabilities).toMatchObject({ loadSession: true, sessionCapabilities: { list: {}, resume: {}, close: {} }, mcpCapabilities: { http: true } })
      expect(init.agentInfo?.name).toBe('ledgerloop')

      // --- session A
      const { sessionId: a } = await agent.request('session/new', { cwd: rootA, mcpServers: [] })
      acp.answer = choose('allow_once')
      const first = await agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'write a.txt' }] })
      await acp.settle()
      expect(first.stopReason).toBe('end_turn')
      expect(chunkText(acp.updates, a, 'agent_thought_chunk')).toBe('Thinking it over.')
      expect(chunkText(acp.updates, a, 'agent_message_chunk')).toBe("I'll write a.txt.Written.")
      expect(readFileSync(join(rootA, 'a.txt'), 'utf8')).toBe('one\n')
      const w1 = toolUpdates(acp, a, 'w1')
      expect(w1[0]).toMatchObject({ sessionUpdate: 'tool_call', status: 'pending', kind: 'edit', title: 'write_file a.txt', locations: [{ path: join(rootA, 'a.txt') }] })
      // The diff (a new file: no old text) is shown before the question, then the call runs and completes.
      expect(w1.find((u) => u.content?.some((c) => c.type === 'diff'))?.content).toEqual([{ type: 'diff', path: join(rootA, 'a.txt'), oldText: null, newText: 'one\n' }])
      expect(w1.map((u) => u.status).filter((s) => s !== undefined)).toEqual(['pending', 'in_progress', 'completed'])
      expect(acp.questions[0]).toMatchObject({ sessionId: a, toolCall: { toolCallId: 'w1' } })
      expect(acp.questions[0]?.options.map((o) => o.kind)).toEqual(['allow_once', 'allow_always', 'reject_once'])

      acp.answer = choose('reject_once')
      const second = await agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'edit notes.txt' }] })
      await acp.settle()
      expect(second.stopReason).toBe('end_turn')
      expect(readFileSync(join(rootA, 'notes.txt'), 'utf8')).toBe('hello world\n')
      const e1 = toolUpdates(acp, a, 'e1')
      expect(e1.find((u) => u.content?.some((c) => c.type === 'diff'))?.content).toEqual([{ type: 'diff', path: join(rootA, 'notes.txt'), oldText: 'hello world\n', newText: 'hello there\n' }])
      expect(e1[e1.length - 1]).toMatchObject({ status: 'failed' })
      expect(JSON.stringify(e1[e1.length - 1]?.content)).toContain('the user declined edit_file')

      // Cancel mid-stream: the prompt resolves `cancelled` right away, and the session goes on.
      const before = acp.updates.length
      const third = agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'talk slowly' }] })
      await acp.waitForUpdate(a, (n) => n.update.sessionUpdate === 'agent_message_chunk' && JSON.stringify(n.update).includes('part1 '))
      const cancelledAt = Date.now()
      await agent.notify('session/cancel', { sessionId: a })
      expect((await third).stopReason).toBe('cancelled')
      expect(Date.now() - cancelledAt).toBeLessThan(3000)
      await acp.settle()
      expect(chunkText(acp.updates, a, 'agent_message_chunk', before)).not.toContain('part39')
      const fourth = await agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'are you there?' }] })
      await acp.settle()
      expect(fourth.stopReason).toBe('end_turn')
      expect(chunkText(acp.updates, a, 'agent_message_chunk')).toContain('Back again.')

      // Cancel while a permission question waits: the prompt is cancelled without the answer, the call never runs.
      let withdrawn: (() => void) | undefined
      const withdrawnSeen = new Promise<void>((resolve) => (withdrawn = resolve))
      acp.answer = (_request, signal) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            withdrawn?.()
            resolve({ outcome: { outcome: 'cancelled' } })
          })
        })
      const asked = acp.questions.length
      const fifth = agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'write b.txt' }] })
      while (acp.questions.length === asked) await new Promise((r) => setTimeout(r, 10))
      await agent.notify('session/cancel', { sessionId: a })
      expect((await fifth).stopReason).toBe('cancelled')
      await withdrawnSeen // the agent withdrew its question ($/cancel_request)
      expect(existsSync(join(rootA, 'b.txt'))).toBe(false)

      // --- session B, with an MCP server from the client and its env
      const { sessionId: b } = await agent.request('session/new', {
        cwd: rootB,
        mcpServers: [{ name: 'fx', command: process.execPath, args: [fixture, 'stdio'], env: [{ name: 'MCP_FIXTURE_LOG', value: mcpLog }] }],
      })
      acp.answer = choose('allow_always')
      const sum = await agent.request('session/prompt', { sessionId: b, prompt: [{ type: 'text', text: 'add 40 and 2' }] })
      await acp.settle()
      expect(sum.stopReason).toBe('end_turn')
      expect(readFileSync(mcpLog, 'utf8')).toMatch(/^add \d+$/m)
      expect(toolUpdates(acp, b, 'm1').at(-1)).toMatchObject({ status: 'completed', rawOutput: '42' })

      // --- list (newest first; the cwd filter), close, load (replayed), resume
      const all = await agent.request('session/list', {})
      expect(all.sessions.map((s) => s.sessionId)).toEqual([b, a])
      expect(all.sessions[1]).toMatchObject({ cwd: rootA, title: 'write a.txt' })
      expect((await agent.request('session/list', { cwd: rootA })).sessions.map((s) => s.sessionId)).toEqual([a])
      expect((await agent.request('session/list', { cwd: join(home, 'elsewhere') })).sessions).toEqual([])

      await agent.request('session/close', { sessionId: a })
      expect((await rpcError(agent.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'hi' }] }))).code).toBe(-32002)
      const loadFrom = acp.updates.length
      await agent.request('session/load', { sessionId: a, cwd: rootA, mcpServers: [] })
      await acp.settle()
      const replay = updatesOf(acp, a, loadFrom)
      expect(chunkText(acp.updates, a, 'user_message_chunk', loadFrom)).toBe('write a.txtedit notes.txttalk slowlyare you there?write b.txt')
      expect(chunkText(acp.updates, a, 'agent_thought_chunk', loadFrom)).toBe('Thinking it over.')
      expect(chunkText(acp.updates, a, 'agent_message_chunk', loadFrom)).toMatch(/^I'll write a\.txt\.Written\.Left it alone\.part0 part1 .*Back again\.$/)
      expect(replay.filter((u) => u.sessionUpdate === 'tool_call').map((u) => (u as { toolCallId: string }).toolCallId)).toEqual(['w1', 'e1', 'w2'])
      expect(replay.filter((u) => u.sessionUpdate === 'tool_call_update').map((u) => (u as { status?: string }).status)).toEqual(['completed', 'failed', 'failed'])

      await agent.request('session/close', { sessionId: b })
      await agent.request('session/resume', { sessionId: b, cwd: rootB })
      const resumedFrom = acp.updates.length
      const again = await agent.request('session/prompt', { sessionId: b, prompt: [{ type: 'text', text: 'still there?' }] })
      await acp.settle()
      expect(again.stopReason).toBe('end_turn')
      expect(chunkText(acp.updates, b, 'agent_message_chunk', resumedFrom)).toBe('Still here.')
      await agent.request('session/close', { sessionId: b })

      // --- protocol errors: answered, and the process stays up
      expect((await rpcError(agent.request('session/prompt', { sessionId: 'no-such-session', prompt: [{ type: 'text', text: 'hi' }] }))).code).toBe(-32002)
      expect((await rpcError(agent.request('session/load', { sessionId: 'no-such-session', cwd: rootA, mcpServers: [] }))).code).toBe(-32002)
      expect((await rpcError(agent.request('session/new', { mcpServers: [] } as never))).code).toBe(-32602)
      expect((await rpcError(agent.request('session/new', { cwd: 'relative/path', mcpServers: [] }))).code).toBe(-32602)
      expect((await rpcError(agent.request('session/new', { cwd: join(home, 'missing'), mcpServers: [] }))).code).toBe(-32602)
      expect((await rpcError(agent.request('session/frobnicate', {}))).code).toBe(-32601)
      acp.writeRaw('this is not json\n')
      await expect.poll(() => acp.lines.some((l) => typeof l === 'object' && l !== null && (l as { id?: unknown }).id === null && (l as { error?: { code?: number } }).error?.code === -32700)).toBe(true)
      expect((await agent.request('session/list', {})).sessions).toHaveLength(2)
    } finally {
      expect(await acp.end()).toBe(0)
    }
    // stdout carried JSON-RPC and nothing else.
    expect(acp.lines.every((l) => typeof l === 'object' && l !== null && (l as { jsonrpc?: unknown }).jsonrpc === '2.0')).toBe(true)

    // Every session's log verifies, and says who decided what.
    const store = new JsonlStore({ dir: join(home, 'sessions') })
    const [idB, idA] = (await store.list()).map((s) => s.id)
    const eventsA = (await store.read(idA as string)).events
    expect(decisions(eventsA).map((d) => [d.callId, d.decision, d.by, d.answer])).toEqual([
      ['w1', 'allow', 'user', 'yes'],
      ['e1', 'deny', 'user', 'no'],
      ['w2', 'deny', 'no-approver', undefined],
    ])
    const reasons = eventsA.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(reasons).toEqual(['completed', 'completed', 'aborted', 'completed', 'aborted'])
    const w2 = eventsA.find((e) => e.type === 'tool/result' && JSON.stringify(e.data).includes('"w2"'))
    expect((w2?.data as { error?: { code: string } }).error?.code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(decisions((await store.read(idB as string)).events).map((d) => [d.decision, d.by, d.answer])).toEqual([['allow', 'user', 'always']])
    for (const id of [idA, idB]) {
      const verify = await runCli(['verify', id as string], { env: cliEnv(home) })
      expect(verify.stdout + verify.stderr).toContain('ok')
      expect(verify.code).toBe(0)
    }
    await store.close()
  }, 120_000)
})

describe('ledgerloop acp with a client that offers file reads', () => {
  it('ACP-FS: read_file answers from the editor buffer (unsaved text), through the tool\'s own confinement checks; a failed client read falls back to the disk', async () => {
    const home = tempHome()
    const root = join(home, 'project')
    mkdirSync(root)
    writeFileSync(join(root, 'open.txt'), 'saved line\n')
    writeFileSync(join(root, 'closed.txt'), 'only on disk\n')
    writeFileSync(join(home, 'secret.txt'), 'outside the root\n')
    const script = join(home, 'script.json')
    writeFileSync(
      script,
      JSON.stringify([
        {
          toolCalls: [
            { id: 'r1', name: 'read_file', arguments: { path: 'open.txt' } },
            { id: 'r2', name: 'read_file', arguments: { path: 'closed.txt' } },
            { id: 'r3', name: 'read_file', arguments: { path: '../secret.txt' } },
          ],
        },
        { text: 'Read them.' },
      ]),
    )
    const acp = startAcp(['--script', script], cliEnv(home))
    const agent = acp.connection.agent
    try {
      await agent.request('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: false } } })
      acp.buffers.set(join(root, 'open.txt'), 'unsaved line one\nunsaved line two\n')
      const { sessionId } = await agent.request('session/new', { cwd: root, mcpServers: [] })
      expect((await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'read the files' }] })).stopReason).toBe('end_turn')
      // Only the files the tool itself could open were asked of the client; the one outside the root never was.
      expect(acp.reads.map((r) => r.path).sort()).toEqual([join(root, 'closed.txt'), join(root, 'open.txt')])
      expect(acp.reads.every((r) => r.sessionId === sessionId)).toBe(true)
    } finally {
      expect(await acp.end()).toBe(0)
    }
    expect(acp.child.out.stderr).toContain(`reading ${join(root, 'closed.txt')} through the client failed`)
    const store = new JsonlStore({ dir: join(home, 'sessions') })
    const [summary] = await store.list()
    const events = (await store.read(summary?.id as string)).events
    const results = new Map(
      events
        .filter((e) => e.type === 'tool/result')
        .map((e) => {
          const data = e.data as { message: { source: { callId: string }; content: { content: { text: string }[] }[] }; error?: { code: string } }
          return [data.message.source.callId, { text: data.message.content[0]?.content[0]?.text, code: data.error?.code }] as const
        }),
    )
    expect(results.get('r1')).toEqual({ text: '    1\tunsaved line one\n    2\tunsaved line two', code: undefined })
    expect(results.get('r2')).toEqual({ text: '    1\tonly on disk', code: undefined })
    expect(results.get('r3')?.code).toBe('PATH_OUTSIDE_ROOT')
    const verify = await runCli(['verify', summary?.id as string], { env: cliEnv(home) })
    expect(verify.code).toBe(0)
    await store.close()
  }, 60_000)
})

describe('ledgerloop acp under bad input and outside stops', () => {
  it('ACP-ERRORS: a failed turn, a budget stop, a second prompt while one runs, an empty prompt, a bad cursor, an MCP server that cannot start, a JSON batch; then SIGTERM mid-prompt closes the turn and the log verifies', async () => {
    const home = tempHome()
    const root = join(home, 'project')
    mkdirSync(root)
    const script = join(home, 'script.json')
    writeFileSync(
      script,
      JSON.stringify([{ error: { code: 'AUTH', message: 'bad key', status: 401 } }, { toolCalls: [{ id: 'l1', name: 'list', arguments: {} }] }, { hang: true }, { hang: true }]),
    )
    const acp = startAcp(['--script', script, '--retries', '0', '--max-steps', '1'], cliEnv(home))
    const agent = acp.connection.agent
    await agent.request('initialize', { protocolVersion: 1 })
    const { sessionId } = await agent.request('session/new', { cwd: root, mcpServers: [{ name: 'gone', command: join(home, 'no-such-server'), args: [], env: [] }] })
    expect(acp.child.out.stderr).toContain("MCP server 'gone' is not available")

    const failed = await rpcError(agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] }))
    expect(failed).toMatchObject({ code: -32603, data: { code: 'AUTH', sessionId } })
    // The turn budget (--max-steps 1) stops a turn that wants a second step.
    expect((await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'list' }] })).stopReason).toBe('max_turn_requests')
    expect((await rpcError(agent.request('session/prompt', { sessionId, prompt: [] }))).code).toBe(-32602)
    expect((await rpcError(agent.request('session/list', { cursor: 'not-ours' }))).code).toBe(-32602)

    const hanging = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] })
    expect((await rpcError(agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'and this' }] }))).code).toBe(-32600)
    acp.writeRaw('[{"jsonrpc":"2.0","id":99,"method":"session/list","params":{}}]\n')
    await expect.poll(() => acp.lines.some((l) => (l as { id?: unknown; error?: { code?: number } }).id === null && (l as { error?: { code?: number } }).error?.code === -32600)).toBe(true)

    // SIGTERM while the prompt hangs: the turn is closed (aborted), the log flushed, the process exits 143.
    const exited = new Promise<number | null>((resolve) => acp.child.once('close', (code) => resolve(code)))
    acp.child.kill('SIGTERM')
    expect(await exited).toBe(143)
    await hanging.catch(() => undefined)
    const verify = await runCli(['verify', sessionId], { env: cliEnv(home) })
    expect(verify.code).toBe(0)
    const store = new JsonlStore({ dir: join(home, 'sessions') })
    const reasons = (await store.read(sessionId)).events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(reasons).toEqual(['error', 'aborted', 'aborted'])
    await store.close()
  }, 60_000)
})
