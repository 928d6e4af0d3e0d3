/**
 * Typed events: every committed event reaches `session/event` listeners, and `event.type` narrows `event.data`
 * to that type's shape — no casts. A scripted model (no key, no network) calls a tool, is rate-limited once
 * (the retry plugin logs `llm/retry`) and answers; the listener prints one line per event worth a line. A plugin of your
 * own declares its event types into `SessionEventDataMap` and gets the same narrowing.
 *
 *   npx tsx examples/typed-events.ts
 */
import { z } from 'zod'
import { createHarness, defineTool, retryPlugin, scriptedAdapter, type JsonValue, type SessionEvent } from 'ledgerloop'

declare module 'ledgerloop' {
  interface SessionEventDataMap {
    /** Written by this example's own plugin when a turn starts. */
    'example/turn-note': { readonly turn: number; readonly note: string }
  }
}

const model = scriptedAdapter({
  script: [
    { toolCalls: [{ name: 'clock', arguments: {} }], usage: { inputTokens: 90, outputTokens: 8 } },
    { error: { code: 'RATE_LIMIT', message: 'slow down (scripted)', status: 429, retryAfterMs: 10 } },
    { text: ['It is ', 'noon.'], usage: { inputTokens: 120, outputTokens: 4 } },
  ],
})

const clock = defineTool({
  name: 'clock',
  description: 'Tells the time',
  parameters: z.object({}),
  execute: () => '12:00',
})

/** One line for the events worth a line; `undefined` for the rest. */
function describe(event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'turn/start':
      return `turn ${event.data.turn} starts${event.data.continues !== undefined ? ` (continues turn ${event.data.continues})` : ''}`
    case 'step/start':
      return `  step ${event.data.step}`
    case 'tool/call':
      return `    calls ${event.data.name}(${event.data.arguments})`
    case 'tool/result':
      return `    ${event.data.error !== undefined ? `failed ${event.data.error.code}` : 'returned'}`
    case 'assistant/message': {
      const text = event.data.message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
      const usage = event.data.usage !== undefined ? ` (${event.data.usage.inputTokens} in · ${event.data.usage.outputTokens} out)` : ''
      return text === '' ? undefined : `    says "${text}"${usage}`
    }
    case 'llm/retry':
      return `    attempt ${event.data.attempt} failed ${event.data.code}, retrying in ${event.data.delayMs} ms`
    case 'example/turn-note':
      return `  note: ${event.data.note}`
    case 'turn/end': {
      const reason = event.data.reason
      return `turn ${event.data.turn} ends ${reason.kind === 'error' ? `error ${reason.error.code}` : reason.kind}`
    }
    default: {
      // A type nobody declared still compares and reads — as plain JSON.
      const data: JsonValue = event.data
      return event.type.startsWith('unknown/') ? `  (${event.type}: ${JSON.stringify(data)})` : undefined
    }
  }
}

const harness = createHarness({
  adapters: [model],
  tools: [clock],
  plugins: [
    retryPlugin({ baseDelayMs: 5, maxDelayMs: 20 }),
    {
      name: 'example/turn-notes',
      // Logs its own typed event as the turn stops (ignorable: readers without this plugin may skip it).
      setup: (hooks) =>
        hooks.on('agent/turn-stopping', async ({ agent, turn }) => {
          agent.session.append('example/turn-note', { turn, note: 'asked for the time' }, { ignorable: true })
        }),
    },
  ],
})
harness.hooks.on('session/event', ({ event }) => {
  const line = describe(event)
  if (line !== undefined) console.log(line)
})

const agent = await harness.createAgent({ provider: 'scripted', model: 'demo' })
const result = await agent.run('What time is it?')
console.log(`\nanswer: ${result.text}`)
await harness.close()
