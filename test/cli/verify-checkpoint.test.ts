// `ledgerloop verify` checks the resume checkpoint beside a JSONL log (issue 30, target 2: "verify still folds
// everything and checks the checkpoint too"): one an open would trust must fold like the log's first events (a
// problem otherwise); one the open would ignore is only noted, since the next open rewrites it.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyLogFile } from '../../src/cli/commands/verify.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { encodeCheckpoint, parseCheckpoint } from '../../src/store/resume-checkpoint.js'
import { ID, recordTurns } from '../store/resume-recorder.js'

const root = mkdtempSync(join(tmpdir(), 'll-verify-cp-'))
const recorded = join(root, 'recorded')
afterAll(() => rmSync(root, { recursive: true, force: true }))

beforeAll(async () => {
  const turns = [
    { text: 6, reasoning: 2, tool: true, steer: false },
    { text: 4, reasoning: 0, tool: false, steer: true },
    { text: 3, reasoning: 1, tool: true, steer: false },
  ]
  await recordTurns(new JsonlStore({ dir: recorded }), turns, () => '')
}, 60_000)

/** A copy of the recorded folder whose checkpoint is `edit` applied to the recorded one (undefined: none). */
function copyWith(name: string, edit: (text: string) => string | undefined): string {
  const dir = join(root, name)
  cpSync(recorded, dir, { recursive: true })
  const where = join(dir, `${ID}.resume.json`)
  const text = edit(readFileSync(where, 'utf8'))
  rmSync(where)
  if (text !== undefined) writeFileSync(where, text, { mode: 0o600 })
  return join(dir, `${ID}.jsonl`)
}

describe('verify and the resume checkpoint', () => {
  it('an intact session with its checkpoint verifies with nothing to say', () => {
    const verified = verifyLogFile(copyWith('intact', (text) => text))
    expect(verified.problems).toEqual([])
    expect(verified.repairs).toEqual([])
    expect(verified.events).toBeGreaterThan(0)
  })

  it('without a checkpoint there is nothing to say either (the log is the only truth)', () => {
    const verified = verifyLogFile(copyWith('none', () => undefined))
    expect(verified.problems).toEqual([])
    expect(verified.repairs).toEqual([])
  })

  it('a well-formed checkpoint anchored on the log whose fold differs from the log is a problem', () => {
    const path = copyWith('forged', (text) => {
      const checkpoint = parseCheckpoint(text, ID)
      expect(checkpoint).toBeDefined()
      const fold = checkpoint?.fold as NonNullable<typeof checkpoint>['fold']
      return encodeCheckpoint({ ...(checkpoint as NonNullable<typeof checkpoint>), fold: { ...fold, lastTurn: fold.lastTurn + 5 } })
    })
    const verified = verifyLogFile(path)
    expect(verified.problems).toHaveLength(1)
    expect(verified.problems[0]).toMatch(/^the resume checkpoint .*cp\.resume\.json matches the log at byte \d+ but not what the log's first \d+ events fold to/)
    expect(verified.repairs).toEqual([])
  })

  it('a damaged checkpoint is a note, not a problem: the next open ignores and rewrites it', () => {
    const verified = verifyLogFile(copyWith('garbage', (text) => text.replace(/"lastTurn":\d+/, '"lastTurn":99')))
    expect(verified.problems).toEqual([])
    expect(verified.repairs).toEqual([expect.stringMatching(/cp\.resume\.json is damaged, of another version or of another session: the next open ignores it/)])
  })

  it('a checkpoint of a longer log than the one beside it (the log was cut since) is a note', () => {
    const path = copyWith('cut', (text) => text)
    const checkpoint = parseCheckpoint(readFileSync(join(root, 'cut', `${ID}.resume.json`), 'utf8'), ID)
    const bytes = readFileSync(path)
    // Cut the log just before the checkpoint's anchor line ends: a shorter, still whole log.
    const at = checkpoint?.anchor.at as number
    const lineStart = bytes.lastIndexOf(0x0a, at - 2) + 1
    writeFileSync(path, bytes.subarray(0, lineStart))
    // Without the session index (which would witness the lost turn as a problem of its own): a copy moved alone.
    rmSync(join(root, 'cut', '.index'), { recursive: true, force: true })
    const verified = verifyLogFile(path)
    expect(verified.problems).toEqual([])
    expect(verified.repairs).toContainEqual(expect.stringMatching(/does not match the line it was cut at \(byte \d+\): the log was cut or rewritten since/))
  })
})
