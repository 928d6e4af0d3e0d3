import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { chunkText, choose, startAcp } from './acp-process.js'

let pg: ScratchDatabase | undefined
beforeAll(async () => {
  ensureBuilt()
  pg = await createScratchDatabase('ll_acp')
}, 120_000)
afterAll(async () => {
  await pg?.drop()
})

const stores: readonly [string, (home: string) => string][] = [
  ['SQLite', (home) => `sqlite:${join(home, 'sessions.db')}`],
  ['PostgreSQL', () => (pg as ScratchDatabase).url],
]

describe.each(stores)('ledgerloop acp on %s', (_name, storeOf) => {
  it('ACP-STORES: new, a prompt with an allowed write, close, list with its cwd, load replays it, and the log verifies', async () => {
    const home = tempHome()
    const root = join(home, 'project')
    mkdirSync(root)
    const store = storeOf(home)
    const script = join(home, 'script.json')
    writeFileSync(script, JSON.stringify([{ text: 'Writing.', toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] }, { text: 'Done.' }]))
    const acp = startAcp(['--script', script, '--store', store], cliEnv(home))
    const agent = acp.connection.agent
    let sessionId = ''
    try {
      await agent.request('initialize', { protocolVersion: 1 })
      ;({ sessionId } = await agent.request('session/new', { cwd: root, mcpServers: [] }))
      acp.answer = choose('allow_once')
      expect((await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write it' }] })).stopReason).toBe('end_turn')
      await agent.request('session/close', { sessionId })
      const listed = await agent.request('session/list', { cwd: root })
      expect(listed.sessions).toMatchObject([{ sessionId, cwd: root, title: 'write it' }])
      const from = acp.updates.length
      await agent.request('session/load', { sessionId, cwd: root, mcpServers: [] })
      await acp.settle()
      expect(chunkText(acp.updates, sessionId, 'user_message_chunk', from)).toBe('write it')
      expect(chunkText(acp.updates, sessionId, 'agent_message_chunk', from)).toBe('Writing.Done.')
    } finally {
      expect(await acp.end()).toBe(0)
    }
    const verify = await runCli(['verify', sessionId, '--store', store], { env: cliEnv(home) })
    expect(verify.stderr).toBe('')
    expect(verify.code).toBe(0)
  }, 60_000)
})
