import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { JsonlStore, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { checkEveryPromptAnswered } from '../support/answered-prompts.js'
import { bundleTestChild } from '../support/child-process-kit.js'

// The poison test on JSONL: one `serve` process (LocalSessionHost) runs five bystanders, each mid-way through a
// multi-step turn, when a sixth session's tool kills the process. A supervisor restarts it, and every session is
// resumed at once after each restart (as a person clicking "resume" on each would). The host runs crash
// continuations one at a time, each alone: the bystanders' complete, the poison's kills only itself, and after
// K = 3 counted tries (the default) its next resume quarantines it. No bystander is quarantined, each one's
// prompts are all answered once, every log verifies.

const K = 3
const TOKEN = 'poison-serve-token-0123456789'
const BYSTANDERS = 5
const here = dirname(fileURLToPath(import.meta.url))

interface Serve {
  readonly child: ChildProcess
  readonly base: Promise<string>
}

it('POISON-JSONL: on serve with five sessions in flight, a session whose tool kills the process ends quarantined after K tries; the bystanders complete, none quarantined', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'll-poison-serve-'))
  const sessions = join(dir, 'sessions')
  let crashes = 0
  let current: Serve | undefined
  let stopping = false
  let starts = 0
  const start = (childFile: string): Serve => {
    const child = spawn(process.execPath, [childFile, sessions, TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] })
    let ready!: (base: string) => void
    const base = new Promise<string>((r) => (ready = r))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const event = JSON.parse(line) as { type: string; base?: string }
      if (event.type === 'ready') ready(event.base as string)
      if (event.type === 'crashing') crashes++
    })
    // Restarted after every crash, as a supervisor (systemd) would.
    child.once('exit', () => {
      starts++
      if (!stopping && starts < 12) current = start(childFile)
    })
    return { child, base }
  }
  const api = async (path: string, body?: unknown): Promise<Response> => {
    const base = await (current as Serve).base
    return fetch(`${base}${path}`, {
      ...(body !== undefined ? { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } } : { headers: { authorization: `Bearer ${TOKEN}` } }),
    })
  }
  try {
    const childFile = await bundleTestChild(join(here, 'poison-serve-child.ts'), dir)
    // The page's files, where the bundled server looks for them (beside it).
    cpSync(join(here, '../../dist/server/web'), join(dir, 'web'), { recursive: true })
    current = start(childFile)
    const create = async (): Promise<string> => ((await (await api('/api/sessions', {})).json()) as { id: string }).id
    const bystanders: string[] = []
    for (let i = 0; i < BYSTANDERS; i++) bystanders.push(await create())
    const poison = await create()
    for (const id of bystanders) expect((await api(`/api/sessions/${id}/followup`, { text: `${id} prompt 1` })).status).toBe(202)
    const status = async (id: string): Promise<string> => ((await (await api(`/api/sessions/${id}`)).json()) as { status: string }).status
    for (const deadline = Date.now() + 20_000; (await Promise.all(bystanders.map(status))).some((s) => s !== 'running'); ) {
      if (Date.now() > deadline) throw new Error('the bystanders did not all start their turns in time')
      await new Promise((r) => setTimeout(r, 20))
    }
    // Kills the process with all five bystanders mid-turn.
    void api(`/api/sessions/${poison}/followup`, { text: 'swallow the poison' }).catch(() => undefined)

    // After each restart: resume everything at once, until the poison is refused as quarantined.
    let quarantined = false
    for (const deadline = Date.now() + 90_000; !quarantined; ) {
      if (Date.now() > deadline) throw new Error(`the poison was not quarantined in time (${crashes} crashes)`)
      const seen = current
      await seen?.base
      const answers = await Promise.all([...bystanders, poison].map((id) => api(`/api/sessions/${id}/resume`, {}).then((r) => [id, r.status] as const, () => [id, 0] as const)))
      quarantined = answers.some(([id, code]) => id === poison && code === 409)
      if (!quarantined) await new Promise((r) => setTimeout(r, 200))
    }
    // The bystanders go on: a second prompt each, all answered.
    for (const id of bystanders) expect((await api(`/api/sessions/${id}/followup`, { text: `${id} prompt 2` })).status).toBe(202)
    const completed = async (id: string): Promise<number> =>
      ((await (await api(`/api/sessions/${id}/events`)).json()) as { events: SessionEvent[] }).events.filter((e) => e.type === 'turn/end' && (e.data as { reason: { kind: string } }).reason.kind === 'completed').length
    for (const deadline = Date.now() + 30_000; (await Promise.all(bystanders.map(completed))).some((n) => n < 2); ) {
      if (Date.now() > deadline) throw new Error(`the bystanders did not complete their prompts in time (completed turns: ${(await Promise.all(bystanders.map(completed))).join(', ')})`)
      await new Promise((r) => setTimeout(r, 100))
    }
    const last = current as Serve
    stopping = true
    last.child.kill('SIGTERM')
    await new Promise((r) => last.child.once('exit', r))

    expect(crashes).toBe(K)
    const store = new JsonlStore({ dir: sessions })
    const poisoned = (await store.read(poison)).events
    expect(verifySessionLog(poisoned).problems).toEqual([])
    expect(poisoned.filter((e) => e.type === 'session/quarantined').map((e) => e.data)).toEqual([
      { reason: expect.stringMatching(/^the same work was interrupted 3 times in a row \(turns 1, 2, 3\): only the original turn and continuations that ran alone in their process count$/), turn: 3, interruptions: [1, 2, 3] },
    ])
    expect(poisoned.filter((e) => e.type === 'session/continued-alone').map((e) => e.data)).toEqual([{ continues: 1 }, { continues: 2 }])
    for (const id of bystanders) {
      const events = (await store.read(id)).events
      expect(verifySessionLog(events).problems, id).toEqual([])
      expect(checkEveryPromptAnswered(events, (why) => expect.fail(`${id}: ${why}`)).prompts, id).toBe(2)
      expect(events.filter((e) => e.type === 'session/quarantined'), id).toEqual([])
      // Cut off once, by the poison's first crash; continued alone, and completed.
      expect(events.filter((e) => e.type === 'turn/end' && (e.data as { reason: { kind: string } }).reason.kind === 'interrupted'), id).toHaveLength(1)
      expect(events.filter((e) => e.type === 'session/continued-alone'), id).toHaveLength(1)
    }
    await store.close()
  } finally {
    stopping = true
    const child = current?.child
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await new Promise((r) => child.once('exit', r))
    }
    rmSync(dir, { recursive: true, force: true })
  }
}, 180_000)
