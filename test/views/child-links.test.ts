// Sub-agent children are listed in the order of the parent's calls that started them: parallel calls create their
// children in the same millisecond, and random session ids made the order of inspect's `subagents` flaky.
import { expect, it } from 'vitest'
import { childSessionLinks } from '../../src/views/child-sessions.js'

it("orders a parent's children by its call order, then by creation time (not by their random ids)", () => {
  const summaries = [
    { id: 'aaa', createdAt: 5, parentSession: 'p', parentCallId: 'call-2' },
    { id: 'zzz', createdAt: 5, parentSession: 'p', parentCallId: 'call-1', agentProfile: 'scout' },
    { id: 'mmm', createdAt: 1, parentSession: 'p', parentCallId: 'call-unknown' },
    { id: 'fork', createdAt: 0, parentSession: 'p' },
    { id: 'other', createdAt: 0, parentSession: 'q', parentCallId: 'call-1' },
  ]
  expect(childSessionLinks(summaries, 'p', ['call-0', 'call-1', 'call-2']).map((l) => l.session)).toEqual(['zzz', 'aaa', 'mmm'])
  // Without the parent's calls: oldest first, then by id.
  expect(childSessionLinks(summaries, 'p').map((l) => l.session)).toEqual(['mmm', 'aaa', 'zzz'])
})
