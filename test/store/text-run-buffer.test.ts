import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { chunkEvent } from '../../src/session/event-log.js'
import type { SessionEvent } from '../../src/session/events.js'
import { encodeRecordLines } from '../../src/store/session-file.js'
import { TextRunBuffer } from '../../src/store/jsonl/text-run-buffer.js'

type Op = { kind: 'text'; turn: number; step: number; type: 'text-delta' | 'reasoning-delta'; index: number; text: string; dt: number } | { kind: 'event' } | { kind: 'flush' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('text' as const),
      turn: fc.integer({ min: 1, max: 2 }),
      step: fc.integer({ min: 1, max: 2 }),
      type: fc.constantFrom('text-delta' as const, 'reasoning-delta' as const),
      index: fc.integer({ min: 0, max: 1 }),
      text: fc.string({ maxLength: 4 }),
      dt: fc.integer({ min: 0, max: 15 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'event' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'flush' as const }) },
)

describe('TextRunBuffer (the JSONL writer packs text deltas as they arrive)', () => {
  it('writes byte for byte what packing the same chunk events at each flush writes (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constant(100_000)), (ops, maxAgeMs) => {
        // Reference: every delta an event, packed per flushed batch. Subject: deltas through the buffer.
        const reference: SessionEvent[][] = [[]]
        const subject: SessionEvent[][] = [[]]
        const buffer = new TextRunBuffer(
          maxAgeMs,
          (event) => void subject.at(-1)?.push(event),
          (run) => void subject.at(-1)?.push(run as unknown as SessionEvent),
        )
        let seq = 0
        let time = 1_700_000_000_000
        for (const op of ops) {
          if (op.kind === 'text') {
            time += op.dt
            reference.at(-1)?.push(chunkEvent(seq, time, op.turn, op.step, Object.freeze({ type: op.type, index: op.index, text: op.text })))
            buffer.add(seq, time, op.turn, op.step, op.type, op.index, op.text)
            expect(buffer.nextSeq).toBe(seq + 1)
            seq++
          } else if (op.kind === 'event') {
            time++
            const event = Object.freeze({ type: 'session/title', seq, time, data: Object.freeze({ title: 't' }) }) as SessionEvent
            reference.at(-1)?.push(event)
            buffer.close()
            subject.at(-1)?.push(event)
            seq++
          } else {
            buffer.close()
            reference.push([])
            subject.push([])
          }
        }
        buffer.close()
        const text = (batches: SessionEvent[][]) => batches.map((b) => encodeRecordLines(b, true)).join('')
        // A run spanning more than maxAgeMs is handed on early (split rows): the bytes may differ, the events may not.
        if (maxAgeMs >= 15 * 80) expect(text(subject)).toBe(text(reference))
        expect(readBack(text(subject))).toEqual(readBack(text(reference)))
      }),
      { numRuns: 300 },
    )
  })
})

/** The events a file's record lines stand for, as JSON text (packed rows expanded). */
function readBack(lines: string): string[] {
  const out: string[] = []
  for (const line of lines.split('\n')) {
    if (line === '') continue
    const record = JSON.parse(line) as { type: string; seq0?: number; time0?: number; data: { turn: number; step: number; index: number; dt: number[]; texts: string[] } }
    if (record.type === 'text-chunks' || record.type === 'reasoning-chunks') {
      let time = record.time0 as number
      record.data.texts.forEach((text, k) => {
        if (k > 0) time += record.data.dt[k - 1] as number
        const type = record.type === 'text-chunks' ? 'text-delta' : 'reasoning-delta'
        out.push(JSON.stringify({ type: 'assistant/chunk', seq: (record.seq0 as number) + k, time, data: { turn: record.data.turn, step: record.data.step, chunk: { type, index: record.data.index, text } } }))
      })
    } else out.push(line)
  }
  return out
}
