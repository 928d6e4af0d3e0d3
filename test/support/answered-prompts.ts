import type { SessionEvent } from '../../src/index.js'

/**
 * The durable-execution promise (issue 24): every prompt and steer the log says was sent reached the model exactly
 * once, in a turn whose work ended `completed` (itself, or through its continuations), and no turn was left
 * `interrupted` without a continuation. Returns how many inputs it checked and how many repair had restored.
 */
export function checkEveryPromptAnswered(events: readonly SessionEvent[], fail: (why: string) => never): { prompts: number; restored: number } {
  const turnOf = (e: SessionEvent): number => (e.data as { turn: number }).turn
  const end = new Map<number, string>()
  const continuedBy = new Map<number, number>()
  const turnAt: number[] = []
  let open = 0
  const seen = new Map<string, number>()
  const sent: string[] = []
  let restored = 0
  for (const e of events) {
    if (e.type === 'turn/start') {
      open = turnOf(e)
      const continues = (e.data as { continues?: number }).continues
      if (continues !== undefined) continuedBy.set(continues, open)
    }
    if (e.type === 'turn/end') end.set(turnOf(e), (e.data as { reason: { kind: string } }).reason.kind)
    if (e.type === 'user/message') {
      const messageId = (e.data as { id: string }).id
      seen.set(messageId, (seen.get(messageId) ?? 0) + 1)
      turnAt[e.seq] = open
    }
    if (e.type === 'agent/inbox/spliced') {
      const d = e.data as { inserted: { id: string }[]; restores?: number }
      if (d.restores !== undefined) restored++
      else sent.push(...d.inserted.map((m) => m.id))
    }
  }
  const finalReason = (turn: number): string | undefined => {
    let t = turn
    while (end.get(t) === 'interrupted' && continuedBy.has(t)) t = continuedBy.get(t) as number
    return end.get(t)
  }
  for (const [turn, reason] of end) if (reason === 'interrupted' && !continuedBy.has(turn)) fail(`turn ${turn} was left interrupted without a continuation`)
  for (const messageId of sent) {
    const times = seen.get(messageId) ?? 0
    if (times !== 1) fail(`input ${messageId} reached the model ${times} times`)
    const at = events.find((e) => e.type === 'user/message' && (e.data as { id: string }).id === messageId) as SessionEvent
    const reason = finalReason(turnAt[at.seq] as number)
    if (reason !== 'completed') fail(`input ${messageId} was taken by turn ${turnAt[at.seq]}, whose work ended ${reason}`)
  }
  return { prompts: sent.length, restored }
}
