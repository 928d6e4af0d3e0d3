// `POST /api/sessions/:id/rerun` and `GET /api/compare` on a server that runs its sessions (issue 25): a rerun
// answers its new session at once and runs in the background; the compare route shows what changed.
import { afterEach, describe, expect, it } from 'vitest'
import { invariantPlugin, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import type { GenerateOptions, UserMessage } from '../../src/llm/types.js'
import { serveScript, serveTools, startServe, type ServeFixture } from './serve-fixture.js'

// A second provider that answers the same prompts its own way: `hold` waits for a cancel, anything else says
// `other answer`; what it was asked (system prompt, model) is kept.
const asked: { system: string; model: string }[] = []
const deployed: string[] = []
function otherScript(request: GenerateOptions): ScriptStep {
  asked.push({ system: request.system ?? '', model: request.model })
  const last = request.messages[request.messages.length - 1]
  const text = last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
  if (text.startsWith('hold')) return { hang: true }
  return { text: ['other ', 'answer'], usage: { inputTokens: 5, outputTokens: 2 } }
}

let f: ServeFixture | undefined
afterEach(async () => {
  await f?.close()
  f = undefined
  asked.length = 0
  deployed.length = 0
})

async function serve(): Promise<ServeFixture> {
  f = await startServe({
    agents: {
      adapters: [
        scriptedAdapter({ script: serveScript, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
        scriptedAdapter({ provider: 'other', script: otherScript, models: { o1: { contextWindow: 100_000, defaultMaxTokens: 1000 }, o2: { contextWindow: 100_000, defaultMaxTokens: 1000 } } }),
      ],
      tools: serveTools(deployed),
      plugins: [invariantPlugin()],
      defaults: { provider: 'scripted', model: 'm1' },
      permissions: { allow: ['echo'] },
      pollMs: 50,
    },
  })
  return f
}

async function recorded(s: ServeFixture, prompts: readonly string[]): Promise<string> {
  const { id } = (await (await s.post('/api/sessions', {})).json()) as { id: string }
  for (const [i, text] of prompts.entries()) {
    expect((await s.post(`/api/sessions/${id}/followup`, { text })).status).toBe(202)
    await s.until(async () => ((await (await s.api(`/api/sessions/${id}`)).json()) as { turns: number }).turns > i)
  }
  return id
}

async function session(s: ServeFixture, id: string): Promise<{ status: string; turns: number; header: { forkedFrom?: string; parentSession?: string } }> {
  return (await (await s.api(`/api/sessions/${id}`)).json()) as never
}

async function error(res: Promise<Response>): Promise<[number, string]> {
  const r = await res
  return [r.status, ((await r.json()) as { error: { code: string } }).error.code]
}

describe('POST /api/sessions/:id/rerun', () => {
  it('reruns onto another provider, model and system prompt: a linked session with the same inputs, compared turn by turn', async () => {
    const s = await serve()
    const id = await recorded(s, ['hi there', 'echo ping'])
    const res = await s.post(`/api/sessions/${id}/rerun`, { provider: 'other', model: 'o2', system: 'You are terse.' })
    expect(res.status).toBe(202)
    const { id: rerun } = (await res.json()) as { id: string }
    await s.until(async () => {
      const r = await session(s, rerun)
      return r.turns === 2 && r.status === 'stored'
    })
    expect((await session(s, rerun)).header).toMatchObject({ forkedFrom: id, parentSession: id })
    expect(asked.every((a) => a.model === 'o2' && a.system.includes('You are terse.'))).toBe(true)
    const events = (await s.store.read(rerun)).events
    const prompts = events.filter((e) => e.type === 'user/message').map((e) => ((e.data as unknown as UserMessage).content[0] as { text: string }).text)
    expect(prompts).toEqual(['hi there', 'echo ping'])

    const compared = (await (await s.api(`/api/compare?a=${id}&b=${rerun}`)).json()) as {
      same: boolean
      a: { provider: string }
      b: { provider: string; model: string }
      turns: { turn: number; same: boolean; differences: string[]; textParts?: { op: string; text: string }[] }[]
    }
    expect(compared.same).toBe(false)
    expect(compared.a.provider).toBe('scripted')
    expect(compared.b).toMatchObject({ provider: 'other', model: 'o2' })
    expect(compared.turns[0]).toMatchObject({ turn: 1, same: false, textParts: [{ op: 'removed', text: 'hello back' }, { op: 'added', text: 'other answer' }] })
    // Turn 2: the original called echo, the rerun answered in text.
    expect(compared.turns[1]?.differences.join('\n')).toMatch(/echo/)
    // Texts left out of the verdict: turn 1 is then the same.
    const lenient = (await (await s.api(`/api/compare?a=${id}&b=${rerun}&ignoreText=true`)).json()) as { turns: { same: boolean }[] }
    expect(lenient.turns[0]?.same).toBe(true)
  })

  it('from a later turn: the earlier turns are copied, only the rest is fed again', async () => {
    const s = await serve()
    const id = await recorded(s, ['hi there', 'and again'])
    const { id: rerun } = (await (await s.post(`/api/sessions/${id}/rerun`, { fromTurn: 2, provider: 'other', model: 'o1' })).json()) as { id: string }
    await s.until(async () => (await session(s, rerun)).turns === 2 && (await session(s, rerun)).status === 'stored')
    expect(asked).toHaveLength(1)
    const compared = (await (await s.api(`/api/compare?a=${id}&b=${rerun}`)).json()) as { turns: { turn: number; same: boolean }[] }
    expect(compared.turns.map((t) => [t.turn, t.same])).toEqual([
      [1, true],
      [2, false],
    ])
  })

  it('is running while it runs, and cancel stops it', async () => {
    const s = await serve()
    const id = await recorded(s, ['hold on', 'never fed'])
    const { id: rerun } = (await (await s.post(`/api/sessions/${id}/rerun`, { provider: 'other', model: 'o1' })).json()) as { id: string }
    await s.until(async () => asked.length === 1)
    expect((await session(s, rerun)).status).toBe('running')
    // Input to a session a rerun is writing is refused, never interleaved.
    expect(await error(s.post(`/api/sessions/${rerun}/followup`, { text: 'x' }))).toEqual([409, 'SESSION_LOCKED'])
    expect((await s.post(`/api/sessions/${rerun}/cancel`)).status).toBe(202)
    await s.until(async () => (await session(s, rerun)).status === 'stored')
    const ends = (await s.store.read(rerun)).events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(ends).toEqual(['aborted'])
  })

  it('live tools run under the rules and nobody is asked: a call left at ask is denied; recorded tools run nothing', async () => {
    const s = await serve()
    const { id } = (await (await s.post('/api/sessions', {})).json()) as { id: string }
    await s.post(`/api/sessions/${id}/followup`, { text: 'deploy now' })
    const [waiting] = await s.until(async () => {
      const list = ((await (await s.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string }[] }).approvals
      return list.length > 0 ? list : undefined
    })
    await s.post(`/api/sessions/${id}/approvals/${String(waiting?.callId)}`, { decision: 'allow' })
    await s.until(async () => ((await session(s, id)).turns === 1 ? true : undefined))
    expect(deployed).toEqual(['staging'])

    for (const tools of ['recorded', 'live'] as const) {
      const { id: rerun } = (await (await s.post(`/api/sessions/${id}/rerun`, { tools })).json()) as { id: string }
      await s.until(async () => (await session(s, rerun)).turns === 1 && (await session(s, rerun)).status === 'stored')
      expect(((await (await s.api(`/api/sessions/${rerun}/approvals`)).json()) as { approvals: unknown[] }).approvals).toEqual([])
      const results = (await s.store.read(rerun)).events.filter((e) => e.type === 'tool/result').map((e) => JSON.stringify(e.data))
      // Recorded: the recorded answer; live: the permission plugin's refusal. Either way the tool body never ran.
      expect(results.join('\n')).toMatch(tools === 'recorded' ? /deployed to staging/ : /TOOL_DENIED|denied/i)
    }
    expect(deployed).toEqual(['staging'])
  })

  it('refuses what cannot run here with structured errors, and starts nothing', async () => {
    const s = await serve()
    const id = await recorded(s, ['hi there'])
    expect(await error(s.post(`/api/sessions/${id}/rerun`, { provider: 'nowhere' }))).toEqual([400, 'NO_ADAPTER'])
    expect(await error(s.post(`/api/sessions/${id}/rerun`, { provider: 'other' }))).toEqual([400, 'INVALID_CONFIG']) // no model for it
    expect(await error(s.post(`/api/sessions/${id}/rerun`, { fromTurn: 2 }))).toEqual([400, 'INVALID_CONFIG'])
    expect(await error(s.post(`/api/sessions/${id}/rerun`, { fromTurn: 0 }))).toEqual([400, 'INVALID_REQUEST'])
    expect(await error(s.post(`/api/sessions/${id}/rerun`, { tool: 'live' }))).toEqual([400, 'INVALID_REQUEST'])
    expect(await error(s.post('/api/sessions/nope/rerun', {}))).toEqual([404, 'SESSION_NOT_FOUND'])
    expect((await s.store.list()).map((r) => r.id)).toEqual([id])
  })
})
