// Content search (issue 30, target 6): `store.list({ grep })` on every store finds sessions by the text of their
// prompts, answers and tool output, through the index each store keeps as sessions are written, and each row
// carries where it matched.
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, type SessionEvent, type SessionStore } from '../../src/index.js'
import type { ScriptStep } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { SNIPPET_MAX } from '../../src/store/content-search.js'
import { STORE_KINDS, useStoreKit } from './store-kits.js'

/** A tool whose output is not its argument: the argument text must not become searchable through it. */
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a code up',
  parameters: z.object({ code: z.string() }),
  execute: ({ code }) => `inventory record for ${code.length}-char code: Quokka warehouse, shelf 7`,
})

// Turn 1: reasoning, a lookup call (its argument a secret-looking token), then an answer after the result.
function model(answer: string): ReturnType<typeof scriptedAdapter> {
  return scriptedAdapter({
    script: (request: GenerateOptions): ScriptStep => {
      const last = request.messages[request.messages.length - 1]
      if (last?.content[0]?.type === 'tool-result') return { text: [answer.slice(0, 5), answer.slice(5)] }
      return { reasoning: ['pondering zebracorn options'], toolCalls: [{ name: 'lookup', arguments: { code: 'sk-SECRETARGUMENT123' } }] }
    },
    models: { m1: { contextWindow: 100_000, defaultMaxTokens: 100 } },
  })
}

async function writeSession(store: SessionStore, prompt: string, answer: string, system = 'You are the Marmoset assistant'): Promise<string> {
  const harness = createHarness({ store, adapters: [model(answer)], tools: [lookup], system, onListenerError: () => {} })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
  await agent.run(prompt)
  const id = agent.session.id
  await agent.dispose()
  return id
}

function seqOf(events: readonly SessionEvent[], type: string, text: string): number {
  const found = events.find((e) => e.type === type && JSON.stringify(e.data).includes(text))
  if (found === undefined) throw new Error(`no ${type} holding ${text}`)
  return found.seq
}

describe.each(STORE_KINDS)('content search: $name', (kind) => {
  const currentKit = useStoreKit(kind)

  it('finds a session by its prompt, its answer or its tool output, with the seq, part and a snippet of the match', async () => {
    const kit = currentKit()
    const a = await writeSession(kit.store, 'Please deploy the Pangolin service to staging', 'Deployed: the Pangolin service answers on port 8080.')
    const b = await writeSession(kit.store, 'Summarise the weekly report', 'The report says revenue grew by a little.')
    const { events } = await kit.store.read(a)

    const byPrompt = await kit.store.list({ grep: 'pangolin service to' })
    expect(byPrompt.map((r) => r.id)).toEqual([a])
    expect(byPrompt.total).toBe(1)
    expect(byPrompt[0]?.match).toEqual({ seq: seqOf(events, 'user/message', 'Pangolin'), part: 'prompt', snippet: 'Please deploy the Pangolin service to staging' })

    const byAnswer = await kit.store.list({ grep: 'PORT 80' })
    expect(byAnswer.map((r) => r.id)).toEqual([a])
    expect(byAnswer[0]?.match).toMatchObject({ seq: seqOf(events, 'assistant/message', 'port 8080'), part: 'answer', snippet: 'Deployed: the Pangolin service answers on port 8080.' })

    const byTool = await kit.store.list({ grep: 'quokka WAREHOUSE' })
    expect(new Set(byTool.map((r) => r.id))).toEqual(new Set([a, b]))
    for (const row of byTool) expect(row.match).toMatchObject({ part: 'tool-output', snippet: expect.stringContaining('Quokka warehouse') })

    // Substring, as grep: the middle of a word matches.
    expect((await kit.store.list({ grep: 'angoli' })).map((r) => r.id)).toEqual([a])
    expect(await kit.store.list({ grep: 'nothing like this anywhere' })).toEqual([])
  })

  it('never finds text that is only in tool arguments, reasoning or the system prompt', async () => {
    const kit = currentKit()
    await writeSession(kit.store, 'look the code up', 'Done looking.')
    for (const grep of ['SECRETARGUMENT', 'zebracorn', 'Marmoset']) expect(await kit.store.list({ grep }), grep).toEqual([])
  })

  it('pages and counts the matches newest first, and ANDs grep with search', async () => {
    const kit = currentKit()
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push(await writeSession(kit.store, `task ${i}: tidy the Axolotl tank`, `tank ${i} is tidy`))
    await writeSession(kit.store, 'an unrelated question', 'an unrelated answer')
    const all = await kit.store.list({ grep: 'axolotl' })
    expect(all.total).toBe(4)
    expect(new Set(all.map((r) => r.id))).toEqual(new Set(ids))
    const page = await kit.store.list({ grep: 'axolotl', limit: 2, offset: 1 })
    expect(page.total).toBe(4)
    expect(page.map((r) => r.id)).toEqual(all.slice(1, 3).map((r) => r.id))
    // A page past the matches, and an empty page, still count them all; no match counts none.
    const past = await kit.store.list({ grep: 'axolotl', limit: 2, offset: 10 })
    expect([past.length, past.total]).toEqual([0, 4])
    expect((await kit.store.list({ grep: 'axolotl', limit: 0 })).total).toBe(4)
    expect((await kit.store.list({ grep: 'no such creature' })).total).toBe(0)
    const both = await kit.store.list({ grep: 'axolotl', search: 'task 2' })
    expect(both.map((r) => r.id)).toEqual([ids[2]])
    expect(both.total).toBe(1)
  })

  it('finds short needles and needles with quotes, wildcards and backslashes literally', async () => {
    const kit = currentKit()
    const a = await writeSession(kit.store, 'write "100%_done" to C:\\tmp\\x', 'ok')
    await writeSession(kit.store, 'write 100 percent done', 'ok')
    for (const grep of ['"100%_', '%_d', 'C:\\tmp', '\\x']) expect((await kit.store.list({ grep })).map((r) => r.id), grep).toEqual([a])
    expect((await kit.store.list({ grep: 'xQ' })).length).toBe(0)
    expect((await kit.store.list({ grep: 'ok' })).length).toBe(2)
  })

  it('keeps the index across writers: a session reopened and continued is found by its new text', async () => {
    const kit = currentKit()
    const id = await writeSession(kit.store, 'first prompt about Narwhals', 'first answer')
    const store = kit.another()
    const harness = createHarness({ store, adapters: [model('second answer mentions Capybaras')], tools: [lookup], onListenerError: () => {} })
    const agent = await harness.resumeAgent(id)
    await agent.run('second prompt')
    await agent.dispose()
    const reader = kit.another()
    expect((await reader.list({ grep: 'capybaras' })).map((r) => r.id)).toEqual([id])
    expect((await reader.list({ grep: 'narwhals' }))[0]?.match?.part).toBe('prompt')
  })

  it('a fork is found by the text it copied up to its fork point, and not by text the parent wrote after it', async () => {
    const kit = currentKit()
    const harness = createHarness({ store: kit.store, adapters: [scriptedAdapter({ script: () => ({ text: ['noted'] }) })], onListenerError: () => {} })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
    await agent.run('first prompt about Capybaras')
    const point = (await kit.store.read(agent.id)).events.at(-1)?.seq as number
    await agent.run('second prompt about Wombats')
    await agent.dispose()
    const early = await harness.forkSession(agent.id, { at: point })
    const whole = await harness.forkSession(agent.id)
    const found = async (grep: string): Promise<string[]> => (await kit.store.list({ grep })).map((r) => r.id).sort()
    expect(await found('capybaras')).toEqual([agent.id, early, whole].sort())
    expect(await found('wombats')).toEqual([agent.id, whole].sort())
    const row = (await kit.store.list({ grep: 'capybaras' })).find((r) => r.id === early)
    expect(row?.match).toMatchObject({ part: 'prompt', snippet: 'first prompt about Capybaras' })
    // Each copied text once: the early fork's one prompt and one answer, not a second copy of either.
    expect((await kit.store.list({ grep: 'first prompt' })).filter((r) => r.id === early)).toHaveLength(1)
  })

  it('keeps snippets within bounds around a match deep in a long text', async () => {
    const kit = currentKit()
    const filler = 'lorem ipsum dolor sit amet '.repeat(200)
    await writeSession(kit.store, `${filler}NEEDLE-IN-HAYSTACK ${filler}`, 'ok')
    const [row] = await kit.store.list({ grep: 'needle-in-haystack' })
    const snippet = row?.match?.snippet ?? ''
    expect(snippet.length).toBeLessThanOrEqual(SNIPPET_MAX)
    expect(snippet).toContain('NEEDLE-IN-HAYSTACK')
    expect(snippet.startsWith('…')).toBe(true)
    expect(snippet.endsWith('…')).toBe(true)
  })

  it('refuses a grep that is not a short string with INVALID_INPUT, and treats a blank one as none', async () => {
    const kit = currentKit()
    await writeSession(kit.store, 'anything', 'ok')
    await expect(kit.store.list({ grep: 'x'.repeat(101) })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    await expect(kit.store.list({ grep: 42 as unknown as string })).rejects.toMatchObject({ code: 'INVALID_INPUT' })
    expect((await kit.store.list({ grep: '   ' })).length).toBe(1)
  })
})
