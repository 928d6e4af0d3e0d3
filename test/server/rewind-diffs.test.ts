import { describe, expect, it } from 'vitest'
import { diffTurnFiles, fileChangesOf } from '../../src/app/turn-file-changes.js'
import type { SessionEvent } from '../../src/session/events.js'
import type { CheckpointBlobStore } from '../../src/store/types.js'
import { sha256 } from '../../src/tools/checkpoint.js'

// The fold behind GET …/file-changes and the diffs behind …/file-changes/:turn, on hand-made logs: a path's net
// change over a turn, and every reason a file is listed without a diff.
const ROOT = '/work/space'
const text = (s: string): Buffer => Buffer.from(s)
const h = (s: string): string => sha256(text(s))

function log(entries: readonly [string, unknown][]): SessionEvent[] {
  return entries.map(([type, data], seq) => ({ type, seq, time: seq, data }) as unknown as SessionEvent)
}
const files = (callId: string, tool: string, changes: unknown[], extra: object = {}): [string, unknown] => ['checkpoint/files', { callId, tool, root: ROOT, paths: [], files: changes, ...extra }]

function blobStore(contents: readonly string[]): CheckpointBlobStore {
  const blobs = new Map(contents.map((c) => [h(c), text(c)]))
  return { put: async () => undefined, get: async (hash) => blobs.get(hash) }
}

describe('REWIND-DIFFS: a turn\'s net change of each path', () => {
  it('folds several calls of a turn into one change per path, and keeps turns and rewinds apart', () => {
    const events = log([
      ['turn/start', { turn: 1 }],
      files('c1', 'write_file', [{ path: 'n.txt', before: null, after: h('v1') }]),
      files('c2', 'edit_file', [{ path: 'n.txt', before: h('v1'), after: h('v2') }]),
      files('c3', 'write_file', [{ path: 'same.txt', before: h('x'), after: h('y') }]),
      files('c4', 'bash', [{ path: 'same.txt', before: h('y'), after: h('x') }, { path: 'big.bin', before: null, after: null, untracked: true }], { incomplete: true }),
      ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
      // Outside any turn: not a turn's change.
      files('c5', 'write_file', [{ path: 'stray.txt', before: null, after: h('s') }]),
      ['checkpoint/restored', { session: 'parent', toTurn: 1, checkpoints: [], files: [], restored: ['a'], deleted: ['b'], conflicts: [{ path: 'c', reason: 'changed outside the agent' }] }],
      ['turn/start', { turn: 2 }],
      ['turn/end', { turn: 2, reason: { kind: 'completed' } }],
    ])
    const { turns, restores } = fileChangesOf(events)
    expect(turns).toHaveLength(1)
    expect(turns[0]?.incomplete).toBe(true)
    expect(turns[0]?.files.map((f) => [f.path, f.change, f.calls.map((c) => c.callId)])).toEqual([
      ['big.bin', 'modified', ['c4']],
      ['n.txt', 'created', ['c1', 'c2']],
      ['same.txt', 'unchanged', ['c3', 'c4']],
    ])
    expect(turns[0]?.files.find((f) => f.path === 'n.txt')).toMatchObject({ before: null, after: h('v2') })
    expect(turns[0]?.files.find((f) => f.path === 'big.bin')?.untracked).toBe(true)
    expect(restores).toEqual([{ seq: 7, afterTurn: 1, session: 'parent', toTurn: 1, restored: ['a'], deleted: ['b'], conflicts: [{ path: 'c', reason: 'changed outside the agent' }] }])
  })

  it('lists without a diff what it cannot show: an untracked side, a missing blob, no blob store, past the answer budget', async () => {
    const turn = {
      turn: 1,
      files: [
        { path: 'a.txt', root: ROOT, change: 'modified' as const, before: h('a\n'), after: h('A\n'), calls: [] },
        { path: 'b.txt', root: ROOT, change: 'modified' as const, before: h('b\n'), after: h('gone\n'), calls: [] },
        { path: 'c.bin', root: ROOT, change: 'modified' as const, before: h('c'), after: h('C'), calls: [], untracked: true as const },
        { path: 'd.txt', root: ROOT, change: 'unchanged' as const, before: h('d'), after: h('d'), calls: [] },
        { path: 'e.txt', root: ROOT, change: 'created' as const, before: null, after: h('e\n'), calls: [] },
      ],
    }
    const blobs = blobStore(['a\n', 'A\n', 'b\n', 'e\n'])
    const shown = await diffTurnFiles(turn, blobs)
    const byPath = new Map(shown.map((f) => [f.path, f]))
    expect(byPath.get('a.txt')).toMatchObject({ added: 1, removed: 1, beforeBytes: 2, afterBytes: 2 })
    expect(byPath.get('b.txt')).toMatchObject({ beforeBytes: 2, note: expect.stringMatching(/is not in the store$/) })
    expect(byPath.get('b.txt')?.hunks).toBeUndefined()
    expect(byPath.get('c.bin')).toMatchObject({ note: expect.stringMatching(/over the checkpoint size limit/) })
    expect(byPath.get('d.txt')).toMatchObject({ added: 0, removed: 0, hunks: [] })
    expect(byPath.get('e.txt')).toMatchObject({ added: 1, removed: 0 })

    const noStore = await diffTurnFiles(turn, undefined)
    expect(noStore.find((f) => f.path === 'a.txt')?.note).toMatch(/keeps no checkpoint blobs/)
    // A budget of 4 bytes: a.txt (2 + 2 bytes) uses it up, the files after it are listed without content.
    const tight = await diffTurnFiles(turn, blobs, { maxTotalBytes: 4 })
    expect(tight.find((f) => f.path === 'a.txt')?.hunks).toBeDefined()
    expect(tight.find((f) => f.path === 'e.txt')).toMatchObject({ tooLarge: true, note: expect.stringMatching(/size limit/) })
  })
})
