import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AvailableCommand } from '@agentclientprotocol/sdk'
import { beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { chunkText, startAcp, type AcpProcess } from './acp-process.js'

beforeAll(() => {
  ensureBuilt()
}, 120_000)

const commandsOf = (acp: AcpProcess, sessionId: string): AvailableCommand[][] =>
  acp.updates.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'available_commands_update').map((n) => (n.update as { availableCommands: AvailableCommand[] }).availableCommands)

// The raw stdout index of the first line matching `test`.
const lineIndex = (acp: AcpProcess, test: (line: Record<string, unknown>) => boolean): number =>
  acp.lines.findIndex((line) => typeof line === 'object' && line !== null && test(line as Record<string, unknown>))

describe('ledgerloop acp session commands', () => {
  it('ACP-UNDO: /undo and /rewind N are advertised after new, load and resume; they rewind files and conversation, the client\'s id goes on in the fork, conflicts are listed and --force redoes the rewind', async () => {
    const home = tempHome()
    const root = join(home, 'project')
    mkdirSync(root)
    writeFileSync(join(root, 'notes.txt'), 'v0\n')
    const script = join(home, 'script.json')
    writeFileSync(
      script,
      JSON.stringify([
        // Turn 1: notes.txt v1.
        { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'notes.txt', content: 'v1\n' } }] },
        { text: 'one' },
        // Turn 2: notes.txt v2, and a new file.
        { toolCalls: [{ id: 'w2', name: 'write_file', arguments: { path: 'notes.txt', content: 'v2\n' } }, { id: 'w3', name: 'write_file', arguments: { path: 'made.txt', content: 'new\n' } }] },
        { text: 'two' },
        // After /undo, in the fork: its turn 2 writes notes.txt v3.
        { toolCalls: [{ id: 'w4', name: 'write_file', arguments: { path: 'notes.txt', content: 'v3\n' } }] },
        { text: 'three' },
      ]),
    )
    const acp = startAcp(['--script', script, '--yes'], cliEnv(home))
    const agent = acp.connection.agent
    const prompt = async (sessionId: string, text: string): Promise<string> => {
      const from = acp.updates.length
      expect((await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] })).stopReason).toBe('end_turn')
      await acp.settle()
      return chunkText(acp.updates, sessionId, 'agent_message_chunk', from)
    }
    let sessionId = ''
    let forkId = ''
    try {
      await agent.request('initialize', { protocolVersion: 1 })
      ;({ sessionId } = await agent.request('session/new', { cwd: root, mcpServers: [] }))
      await acp.waitForUpdate(sessionId, (n) => n.update.sessionUpdate === 'available_commands_update')
      expect(commandsOf(acp, sessionId)[0]?.map((c) => c.name)).toEqual(['undo', 'rewind'])
      expect(commandsOf(acp, sessionId)[0]?.find((c) => c.name === 'rewind')?.input?.hint).toMatch(/N/)
      // The client learns the id from the response, so the update naming it comes after.
      const response = lineIndex(acp, (l) => (l['result'] as { sessionId?: string } | undefined)?.sessionId === sessionId)
      const advert = lineIndex(acp, (l) => (l['params'] as { update?: { sessionUpdate?: string } } | undefined)?.update?.sessionUpdate === 'available_commands_update')
      expect(response).toBeGreaterThanOrEqual(0)
      expect(advert).toBeGreaterThan(response)

      // Nothing to undo before a turn ended; a bad /rewind says how to use it. Neither reaches the model.
      expect(await prompt(sessionId, '/undo')).toMatch(/Nothing to rewind yet/)
      expect(await prompt(sessionId, '/rewind two')).toMatch(/usage: \/rewind N/)
      expect(await prompt(sessionId, 'first')).toBe('one')
      expect(await prompt(sessionId, 'second')).toBe('two')
      expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('v2\n')
      expect(readFileSync(join(root, 'made.txt'), 'utf8')).toBe('new\n')

      // /undo: turn 2's files back, the created file gone; the conversation goes on from turn 1 in a fork.
      const undone = await prompt(sessionId, '/undo')
      expect(undone).toContain('Rewound to the end of turn 1.')
      expect(undone).toContain('Restored: notes.txt')
      expect(undone).toContain('Deleted: made.txt')
      forkId = /ledgerloop session ([0-9a-f-]+), forked from/.exec(undone)?.[1] as string
      expect(forkId).toBeDefined()
      expect(forkId).not.toBe(sessionId)
      expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('v1\n')
      expect(existsSync(join(root, 'made.txt'))).toBe(false)
      // The client's id keeps working: the next prompt is turn 2 of the fork, its updates under that id.
      expect(await prompt(sessionId, 'third')).toBe('three')
      expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('v3\n')

      // An outside edit is a conflict: left as it is and listed; --force right after redoes the rewind.
      writeFileSync(join(root, 'notes.txt'), 'edited in the editor\n')
      const conflicted = await prompt(sessionId, '/rewind 1')
      expect(conflicted).toContain('Conflict, left as it is: notes.txt')
      expect(conflicted).toContain('/rewind 1 --force')
      expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('edited in the editor\n')
      const forced = await prompt(sessionId, '/rewind 1 --force')
      expect(forced).toContain('Restored: notes.txt')
      expect(forced).not.toContain('Conflict')
      expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('v1\n')
      expect(await prompt(sessionId, '/rewind 1')).toMatch(/Nothing to rewind: turn 1 is the last turn/)

      // Resumed and loaded again under the same id: the commands are advertised each time, and load replays
      // the conversation the session is in now (turn 1 of the last fork), not the one before the rewinds.
      const before = commandsOf(acp, sessionId).length
      await agent.request('session/resume', { sessionId, cwd: root })
      await acp.waitForUpdate(sessionId, () => commandsOf(acp, sessionId).length > before)
      const from = acp.updates.length
      await agent.request('session/load', { sessionId, cwd: root, mcpServers: [] })
      await acp.waitForUpdate(sessionId, () => commandsOf(acp, sessionId).length > before + 1)
      expect(chunkText(acp.updates, sessionId, 'user_message_chunk', from)).toBe('first')
      expect(chunkText(acp.updates, sessionId, 'agent_message_chunk', from)).toBe('one')
    } finally {
      expect(await acp.end()).toBe(0)
    }
    // The original session got no conversation events from the rewinds; every log verifies.
    const store = new JsonlStore({ dir: join(home, 'sessions') })
    const listed = await store.list()
    expect(listed.length).toBeGreaterThanOrEqual(3)
    const original = (await store.read(sessionId)).events
    expect(original.filter((e: SessionEvent) => e.type === 'turn/end')).toHaveLength(2)
    expect(original.some((e: SessionEvent) => e.type === 'checkpoint/restored')).toBe(false)
    const fork = (await store.read(forkId)).events
    expect(fork.filter((e: SessionEvent) => e.type === 'checkpoint/restored')).toHaveLength(1)
    for (const summary of listed) {
      const verify = await runCli(['verify', summary.id], { env: cliEnv(home) })
      expect(verify.code, verify.stderr).toBe(0)
    }
    await store.close()
  }, 90_000)
})
