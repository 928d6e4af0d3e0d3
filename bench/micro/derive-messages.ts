/**
 * Micro-benchmark: the cost of the incremental history derivation at growing log sizes.
 *
 * Builds sessions of 1k, 10k and 100k events with a realistic mix (per step: step/start, a user message or a
 * tool call + tool result, ~20 assistant chunks, the assistant message, step/end; turns of 1-4 steps), then
 * measures, as the median of many repetitions after a warm-up:
 *   - `deriveMessagesFrozen()` with nothing new (the cached path),
 *   - `deriveMessagesFrozen()` right after ONE more append of a surface event (what the loop calls),
 *   - `deriveMessages()` right after ONE more append (the public API, which also copies the array),
 *   - a plain copy of an array as long as the history (the part of a fresh snapshot that is O(messages)),
 *   - one full `foldMessages(events)` from scratch, for contrast.
 * The projection work is O(new surface nodes), so it stays flat from 1k to 100k events; what grows is only the
 * copy into the fresh array each call must return (a memcpy of pointers, well under 1 ns per message).
 *
 * Run: npx tsx bench/micro/derive-messages.ts
 */
import { Session } from '../../src/session/session.js'
import { foldMessages } from '../../src/session/surface.js'
import type { SessionEvent } from '../../src/session/events.js'

const SIZES = [1_000, 10_000, 100_000]
const WARMUP = 100
const REPS = 1_000
/** Appends measured per fresh session (the log grows by at most this much over its nominal size). */
const BATCH = 20
const CHUNKS_PER_STEP = 20

let idCounter = 0
const nextId = (prefix: string): string => `${prefix}-${++idCounter}`

function userMessage(text: string) {
  return { id: nextId('u'), role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
}

/** Appends whole turns until the log holds at least `target` events. */
function buildSession(target: number): Session {
  const s = new Session()
  let turn = 0
  while (s.length < target) {
    turn++
    s.append('turn/start', { turn })
    const steps = 1 + (turn % 4)
    for (let step = 1; step <= steps; step++) {
      s.append('step/start', { turn, step })
      if (step === 1) s.append('user/message', userMessage(`question ${turn}`), { surfaceOp: 'append' })
      if (step === 1) s.append('request/header', { header: { config: { provider: 'p', model: 'm' } }, reason: turn === 1 ? 'initial' : 'resume' })
      const seqs: number[] = []
      seqs.push(s.append('assistant/chunk', { turn, step, chunk: { type: 'block-start', index: 0, blockType: 'text' } }).seq)
      let text = ''
      for (let c = 0; c < CHUNKS_PER_STEP - 2; c++) {
        const piece = `token${c} `
        text += piece
        seqs.push(s.append('assistant/chunk', { turn, step, chunk: { type: 'text-delta', index: 0, text: piece } }).seq)
      }
      seqs.push(s.append('assistant/chunk', { turn, step, chunk: { type: 'block-end', index: 0, block: { type: 'text', text } } }).seq)
      const lastStep = step === steps
      const content: object[] = [{ type: 'text', text }]
      const callId = nextId('call')
      if (!lastStep) content.push({ type: 'tool-call', id: callId, name: 'read_file', arguments: '{"path":"a.txt"}' })
      const message = { id: nextId('a'), role: 'assistant', content, source: { kind: 'model', provider: 'p', model: 'm' } }
      s.append('assistant/message', { turn, step, message, usage: { inputTokens: 100, outputTokens: 20 } }, { surfaceOp: 'append', sourceEventSeqs: seqs })
      if (!lastStep) {
        const callSeq = s.append('tool/call', { turn, step, callId, name: 'read_file', arguments: '{"path":"a.txt"}' }).seq
        const result = {
          turn,
          step,
          message: { id: nextId('r'), role: 'user', content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text: 'file contents' }] }], source: { kind: 'tool', callId } },
        }
        s.append('tool/result', result, { surfaceOp: 'append', sourceEventSeqs: [callSeq] })
      }
      s.append('step/end', { turn, step })
    }
    s.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
  return s
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

const now = (): bigint => process.hrtime.bigint()

/**
 * Median ns of `measure(session)` right after `prepare(session)` (untimed). To keep the log at its nominal size,
 * the samples come in batches of BATCH, each batch on a fresh session seeded with the same frozen base log
 * (adopted in place) and warmed with one full derivation; the first WARMUP samples are discarded.
 */
function bench(base: readonly SessionEvent[], prepare: (s: Session) => void, measure: (s: Session) => unknown): number {
  const samples: number[] = []
  let sink = 0
  let taken = 0
  while (samples.length < REPS) {
    const session = new Session({ seed: base })
    session.deriveMessagesFrozen()
    for (let i = 0; i < BATCH && samples.length < REPS; i++) {
      prepare(session)
      const t0 = now()
      const out = measure(session)
      const t1 = now()
      sink += out === undefined ? 0 : 1
      if (taken++ >= WARMUP) samples.push(Number(t1 - t0))
    }
  }
  if (sink < 0) console.log(sink)
  return median(samples)
}

interface Row {
  events: number
  messages: number
  cached: number
  frozenAfterAppend: number
  deriveAfterAppend: number
  fullFoldMs: number
  /** A plain `Array#slice` of an array as long as the history: the copy every fresh snapshot must make. */
  copyOnly: number
}

let steer = 0
const appendOne = (s: Session): void => {
  s.append('user/message', userMessage(`steer ${steer++}`), { surfaceOp: 'append' })
}

const rows: Row[] = []
for (const size of SIZES) {
  const base = buildSession(size).events
  const cached = bench(base, () => {}, (s) => s.deriveMessagesFrozen())
  const frozenAfterAppend = bench(base, appendOne, (s) => s.deriveMessagesFrozen())
  const deriveAfterAppend = bench(base, appendOne, (s) => s.deriveMessages())
  const t0 = now()
  const folded = foldMessages(base)
  const fullFoldMs = Number(now() - t0) / 1e6
  if (folded.length !== new Session({ seed: base }).deriveMessages().length) throw new Error('full fold and incremental derivation disagree')
  const plain = folded.slice()
  const copyOnly = bench(base.slice(0, 0), () => {}, () => plain.slice())
  rows.push({ events: base.length, messages: folded.length, cached, frozenAfterAppend, deriveAfterAppend, fullFoldMs, copyOnly })
}

const fmt = (ns: number): string => `${(ns / 1000).toFixed(2)} µs`
console.log(`deriveMessages micro-benchmark (node ${process.version}; median of ${REPS} samples after ${WARMUP} warm-up, batches of ${BATCH} appends per fresh session)`)
console.log('')
console.log('| events | messages | frozen, cached | frozen after 1 append | deriveMessages() after 1 append | array copy alone | full fold (once, for contrast) |')
console.log('|---:|---:|---:|---:|---:|---:|---:|')
for (const r of rows) {
  console.log(`| ${r.events} | ${r.messages} | ${fmt(r.cached)} | ${fmt(r.frozenAfterAppend)} | ${fmt(r.deriveAfterAppend)} | ${fmt(r.copyOnly)} | ${r.fullFoldMs.toFixed(2)} ms |`)
}
