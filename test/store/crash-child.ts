/**
 * The process the crash test kills. It runs scripted sessions on a JsonlStore in a loop until SIGKILLed:
 *
 *   crash-child <dir> <side-file> <tag> <seed> <sessions> <session-prefix>
 *
 * (`<dir>` written `sqlite:PATH` runs them on a SqliteStore instead.)
 *
 * Prints `READY` once loaded, waits for a `go` line on stdin (so the parent can keep children warm), then
 * prints `F <session> <seq> <type>` each time a flush resolves (every event up to that seq is durable), and
 * records each tool execution as `<session> <callId>` in the side file (append + fsync) while the tool runs.
 * Some parent steps hand work to sub-agents (the `task` tool): each child session runs its own `record` calls,
 * so kills also land while children run.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, subagentTool, type ScriptStep, type SessionStore, type SessionWriter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { GenerateOptions } from '../../src/llm/types.js'

const [dir, sideFile, tag, seedText, sessionsText, prefix] = process.argv.slice(2) as [string, string, string, string, string, string]
let rng = Number(seedText) >>> 0
/** mulberry32: small, seedable. */
function random(): number {
  rng = (rng + 0x6d2b79f5) >>> 0
  let t = rng
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

function say(line: string): void {
  // stdout is a pipe: writes are synchronous on Linux, so a printed line was said before any later kill.
  process.stdout.write(line + '\n')
}

/** Reports every resolved flush with the last seq it covered. */
function reporting(store: SessionStore): SessionStore {
  const wrap = (id: string, writer: SessionWriter): SessionWriter => {
    let last: { seq: number; type: string } | undefined
    return {
      append(event) {
        writer.append(event)
        last = { seq: event.seq, type: event.type }
      },
      async flush() {
        const covered = last
        await writer.flush()
        if (covered !== undefined) say(`F ${id} ${covered.seq} ${covered.type}`)
      },
      close: () => writer.close(),
    }
  }
  return {
    create: async (header, seed) => wrap(header.id, await store.create(header, seed)),
    open: async (id) => {
      const opened = await store.open(id)
      return { ...opened, writer: wrap(id, opened.writer) }
    },
    read: (id) => store.read(id),
    has: (id) => store.has(id),
    list: () => store.list(),
    close: () => store.close(),
  }
}

let calls = 0
let warming = true
const model = scriptedAdapter({
  script: (request: GenerateOptions): ScriptStep => {
    const last = request.messages[request.messages.length - 1]
    const delayMs = random() < 0.3 ? 1 : 0
    if (last?.content[0]?.type === 'tool-result' && random() < 0.6) return { text: ['fine', ', ', 'that', ' is', ' done'], delayMs }
    const count = 1 + Math.floor(random() * 3)
    const records = Array.from({ length: count }, () => ({ id: `${tag}-${calls++}`, name: 'record', arguments: { note: 'x'.repeat(Math.floor(random() * 200)) } }))
    // A parent (never a child: maxDepth 1) sometimes delegates one or two tasks beside its own record calls.
    const child = (request.system ?? '').includes('You are a sub-agent')
    const tasks = !child && random() < 0.35 ? Array.from({ length: 1 + Math.floor(random() * 2) }, () => ({ id: `${tag}-${calls++}`, name: 'task', arguments: { task: 'record a few things' } })) : []
    // Sometimes a replay-safe `look` too: a kill that cuts it off has the continuation run it again.
    const looks = random() < 0.3 ? [{ id: `${tag}-${calls++}`, name: 'look', arguments: { note: 'y' } }] : []
    return { reasoning: ['let', ' me', ' think'], toolCalls: [...tasks, ...looks, ...records.slice(0, tasks.length > 0 ? 1 : count)], delayMs }
  },
  models: { m1: { contextWindow: 1_000_000, defaultMaxTokens: 100 } },
})

/** A tool that records each run of its body in the side file (`<session> <callId> <tool>`). */
function recording(name: string, replay: 'never' | 'safe') {
  return defineTool({
    name,
    description: 'Records that it ran',
    parameters: z.object({ note: z.string() }),
    concurrencySafe: true,
    replay,
    execute: (_args, { callId, agent }) => {
      if (warming) return 'warm' // the warm-up session and its sub-agents live on a throwaway store
      const fd = openSync(sideFile, 'a')
      try {
        writeSync(fd, `${agent.id} ${callId} ${name}\n`)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      return 'recorded'
    },
  })
}
const record = recording('record', 'never')
const look = recording('look', 'safe')

const store = reporting(dir.startsWith('sqlite:') ? new SqliteStore({ path: dir.slice('sqlite:'.length), flushDelayMs: 5 }) : new JsonlStore({ dir, flushDelayMs: 5 }))
const harness = createHarness({ store, adapters: [model], tools: [record, look, subagentTool({ maxDepth: 1 })], onListenerError: () => {} })
const sessions = Number(sessionsText)

async function work(): Promise<never> {
  for (;;) {
    const id = `${prefix}s${Math.floor(random() * sessions)}`
    const options = { provider: 'scripted', model: 'm1' }
    const agent = (await store.has(id)) ? await harness.resumeAgent(id, options) : await harness.createAgent({ ...options, sessionId: id })
    const turns = 1 + Math.floor(random() * 3)
    for (let t = 0; t < turns; t++) {
      agent.followup(`turn ${t}`)
      await agent.whenIdle()
    }
    await agent.dispose()
  }
}

// Warm the loop up on a throwaway memory store first, so the first milliseconds after `go` do real work
// rather than compile code: kills then land in every phase of a turn, not mostly in start-up.
async function warmUp(): Promise<void> {
  const scratch = createHarness({ adapters: [model], tools: [record, look, subagentTool({ maxDepth: 1 })], onListenerError: () => {} })
  const agent = await scratch.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'warm-up' })
  for (let t = 0; t < 2; t++) {
    agent.followup('warm up')
    await agent.whenIdle()
  }
  await scratch.close()
  warming = false
}

await warmUp()
say('READY')
createInterface({ input: process.stdin }).once('line', () => {
  work().catch((error: unknown) => {
    say(`ERROR ${String((error as Error)?.stack ?? error).replace(/\n/g, ' | ')}`)
    process.exit(3)
  })
})
