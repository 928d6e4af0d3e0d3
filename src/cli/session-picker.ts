// `ledgerloop resume`: recent sessions in a list to move through with the arrow keys, Enter to pick.
import { emitKeypressEvents } from 'node:readline'
import type { Style } from './style.js'
import type { SessionRow } from './commands/sessions.js'
import { formatCost } from '../views/cost.js'

/** Sessions a picker offers: the most recent root sessions (sub-agents' are left out). */
export const RESUME_PICKER_SIZE = 15

/** `12 s ago`, `5 m ago`, `3 h ago`, `2 d ago`: how long since a session was last written. */
export function ageOf(updatedAt: string, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(updatedAt)) / 1000))
  if (seconds < 60) return `${seconds} s ago`
  if (seconds < 3600) return `${Math.floor(seconds / 60)} m ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`
  return `${Math.floor(seconds / 86_400)} d ago`
}

/**
 * The picker's lines, one per session: the title (cut to fit), then age, turns, last reason, cost and the id's
 * start, each in a column of its own so the eye can run down it.
 */
export function pickerLines(rows: readonly SessionRow[], width: number, now: number = Date.now()): string[] {
  const cells = rows.map((row) => [
    ageOf(row.updatedAt, now),
    `${row.turns} turn${row.turns === 1 ? '' : 's'}`,
    row.lastReason ?? '-',
    row.cost !== undefined ? formatCost(row.cost.total, row.cost.currency) : '',
    row.id.slice(0, 8),
  ])
  const widths = [0, 1, 2, 3, 4].map((c) => Math.max(...cells.map((cell) => (cell[c] as string).length)))
  const facts = cells.map((cell) => cell.map((text, c) => (c === 0 || c === 1 ? text.padStart(widths[c] as number) : text.padEnd(widths[c] as number))).join('  '))
  const room = Math.max(10, width - (facts[0]?.length ?? 0) - 2)
  return rows.map((row, i) => {
    const title = row.title === '' ? '(no prompt)' : row.title.replace(/\s+/g, ' ')
    const shown = title.length > room ? `${title.slice(0, room - 1)}…` : title
    return `${shown.padEnd(room)}  ${facts[i] as string}`.trimEnd()
  })
}

/**
 * Shows `rows` and lets a person pick one with ↑/↓ (or k/j) and Enter; Esc, q or Ctrl-C picks nothing. Needs a
 * terminal on both ends; the list is drawn in place and left on screen with the choice marked.
 */
export function pickSession(rows: readonly SessionRow[], input: NodeJS.ReadStream, out: NodeJS.WriteStream, style: Style): Promise<SessionRow | undefined> {
  return new Promise((resolve) => {
    let selected = 0
    let drawn = 0
    const width = Math.max(40, (out.columns ?? 100) - 1)
    const draw = (): void => {
      // Back to the top of the list drawn last time, then every line again.
      if (drawn > 0) out.write(`\x1b[${drawn}A`)
      const lines = pickerLines(rows, width - 2).map((line, i) => (i === selected ? `${style.bold(style.cyan('›'))} ${style.bold(line)}` : `  ${line}`))
      lines.push(style.dim('↑/↓ to move, Enter to resume, Esc to cancel'))
      for (const line of lines) out.write(`\r\x1b[2K${line}\n`)
      drawn = lines.length
    }
    const finish = (row: SessionRow | undefined): void => {
      input.off('keypress', onKey)
      input.setRawMode(false)
      input.pause()
      resolve(row)
    }
    const onKey = (_text: string | undefined, key: { name?: string; ctrl?: boolean } | undefined): void => {
      const name = key?.name ?? _text
      if (name === 'up' || name === 'k') selected = (selected - 1 + rows.length) % rows.length
      else if (name === 'down' || name === 'j') selected = (selected + 1) % rows.length
      else if (name === 'home') selected = 0
      else if (name === 'end') selected = rows.length - 1
      else if (name === 'return' || name === 'enter') return finish(rows[selected])
      else if (name === 'escape' || name === 'q' || (key?.ctrl === true && name === 'c')) return finish(undefined)
      else return
      draw()
    }
    emitKeypressEvents(input)
    input.setRawMode(true)
    input.resume()
    input.on('keypress', onKey)
    draw()
  })
}
