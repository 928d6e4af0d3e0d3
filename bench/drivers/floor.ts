// The floor: the same session events a loop logs for this workload,
// JSON-serialised (and appended to a file) with no loop at all.
// Variants:
//   serialise        JSON.stringify every event, nothing written
//   fsync-step       one writeSync of the step's lines + one fsync per step
//   fsync-2          write+fsync before the tool body, write+fsync at step end
//   fsync-tool-turn  write+fsync of everything pending before each tool body
//                    and at turn end (the durable ledgerloop JSONL policy)
// The events mirror the log of the original harness for this workload:
// 32 per tool step (step/start, 27 assistant/chunk, assistant/message,
// tool/call, tool/result, step/end), plus turn/start, user/message,
// request/header, request/context and turn/end once per turn.
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { CreateDriver } from '../src/driver.ts'
import { PROMPT, SYSTEM_PROMPT, STEP_TEXT, TOOL_DESCRIPTION, TOOL_NAME, type StepPlan, type Workload } from '../src/workload.ts'

type Policy = 'serialise' | 'fsync-step' | 'fsync-2' | 'fsync-tool-turn'
const POLICIES: readonly string[] = ['serialise', 'fsync-step', 'fsync-2', 'fsync-tool-turn']

/** Builds events with seq/time envelopes and serialises each once into a pending buffer. */
class EventLog {
  private seq = 0
  private pending = ''
  bytes = 0
  lines = 0
  add(type: string, data: unknown): void {
    const line = JSON.stringify({ type, seq: this.seq++, time: Date.now(), data })
    this.pending += line + '\n'
    this.lines++
  }
  /** Take the pending lines (as one string) and clear them. */
  take(): string {
    const out = this.pending
    this.pending = ''
    this.bytes += out.length
    return out
  }
}

function streamStep(log: EventLog, turn: number, step: number, plan: StepPlan): void {
  log.add('step/start', { turn, step })
  const chunk = (c: unknown) => log.add('assistant/chunk', { turn, step, chunk: c })
  chunk({ type: 'block-start', index: 0, blockType: 'text' })
  for (const text of plan.chunks) chunk({ type: 'text-delta', index: 0, text })
  chunk({ type: 'block-end', index: 0, block: { type: 'text', text: STEP_TEXT } })
  const content: unknown[] = [{ type: 'text', text: STEP_TEXT }]
  const call = plan.toolCall
  if (call) {
    const block = { type: 'tool-call', id: call.id, name: call.name, arguments: call.argumentsJson }
    chunk({ type: 'block-start', index: 1, blockType: 'tool-call' })
    chunk({ type: 'tool-call-delta', index: 1, id: call.id, name: call.name, argumentsDelta: call.argumentsJson })
    chunk({ type: 'block-end', index: 1, block })
    content.push(block)
  }
  const usage = { inputTokens: 10, outputTokens: 5 }
  chunk({ type: 'usage', usage })
  chunk({ type: 'finish', reason: { kind: call ? 'tool-calls' : 'stop' } })
  log.add('assistant/message', { turn, step, message: { id: `a${step}`, role: 'assistant', content, source: { kind: 'model' } }, usage })
  if (call) log.add('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.argumentsJson })
}

export const createDriver: CreateDriver = async (variant, options) => {
  if (!POLICIES.includes(variant)) throw new Error(`unknown floor variant '${variant}'`)
  const policy = variant as Policy
  mkdirSync(options.tmpDir, { recursive: true })
  let files = 0
  return {
    async prepare(workload: Workload) {
      const log = new EventLog()
      const fd = policy === 'serialise' ? -1 : openSync(join(options.tmpDir, `floor-${++files}.jsonl`), 'a')
      let fsyncs = 0
      const flush = (sync: boolean) => {
        const text = log.take()
        if (fd < 0) return
        writeSync(fd, text)
        if (sync) {
          fsyncSync(fd)
          fsyncs++
        }
      }
      return {
        async go() {
          const turn = 1
          log.add('turn/start', { turn })
          log.add('user/message', { id: 'u1', role: 'user', content: [{ type: 'text', text: PROMPT }], source: { kind: 'user' } })
          log.add('request/header', {
            header: {
              config: { provider: 'scripted', model: 'bench' },
              system: SYSTEM_PROMPT,
              tools: [{ name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: { type: 'object', properties: { step: { type: 'number' } } } }],
            },
            reason: 'initial',
          })
          log.add('request/context', { provider: 'scripted', model: 'bench' })
          for (let step = 1; step <= workload.steps; step++) {
            const plan = workload.beginStep(2 * step - 1)
            streamStep(log, turn, step, plan)
            const call = plan.toolCall
            if (call) {
              if (policy === 'fsync-2' || policy === 'fsync-tool-turn') flush(true) // intent before effect
              const text = workload.runTool(call.args)
              log.add('tool/result', {
                turn, step,
                message: { id: `t${step}`, role: 'user', content: [{ type: 'tool-result', toolCallId: call.id, content: [{ type: 'text', text }] }], source: { kind: 'tool', callId: call.id } },
              })
            }
            log.add('step/end', { turn, step })
            if (policy === 'fsync-step' || policy === 'fsync-2') flush(true)
            if (policy === 'serialise') flush(false)
          }
          log.add('turn/end', { turn, reason: { kind: 'completed' } })
          flush(policy !== 'serialise')
        },
        after() {
          if (fd >= 0) closeSync(fd)
          return { eventsPerStep: log.lines / workload.steps, fsyncsPerStep: fsyncs / workload.steps, bytesPerStep: log.bytes / workload.steps }
        },
      }
    },
  }
}
