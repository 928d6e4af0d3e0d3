// Where a waterfall bar's figures go: after the bar, else before it, with the longest text that fits; never
// over another label and never past the row's edge (which would clip it). Widths are measured, not guessed
// from percentages, so the answer holds at any window width.

// Space between a bar and its text, and the room past the track's right end that belongs to the row.
const GAP = 6
const RIGHT_ROOM = 56
// The text's chip: 3px of padding on each side.
const CHIP = 6

let context

/** The drawn width (px) of a bar text in the figures' font, chip included. */
export function textWidth(text) {
  if (context === undefined) {
    context = document.createElement('canvas').getContext('2d')
    const mono = getComputedStyle(document.documentElement).getPropertyValue('--mono').trim()
    context.font = `11px ${mono !== '' ? mono : 'monospace'}`
  }
  return Math.ceil(context.measureText(text).width) + CHIP
}

/**
 * Picks a text and a place for it. `widths` are the candidate texts' widths, longest text first; `barLeft` and
 * `barWidth` are in px on a track `trackWidth` px wide. Returns `{ index, side, x }` (x = the text's left edge
 * on the track), or undefined when not even the shortest text fits in the row.
 */
export function placeFigures(widths, barLeft, barWidth, trackWidth) {
  const limit = trackWidth + RIGHT_ROOM
  for (const [index, w] of widths.entries()) {
    const after = barLeft + barWidth + GAP
    if (after + w <= limit) return { index, side: 'after', x: after }
    const before = barLeft - GAP - w
    if (before >= 0) return { index, side: 'before', x: before }
  }
  // A bar spanning the whole track leaves no side free: the shortest text goes over it, on its own chip.
  const index = widths.length - 1
  const w = widths[index]
  if (w === undefined || w > limit) return undefined
  return { index, side: 'over', x: Math.max(0, Math.min(barLeft + GAP, limit - w)) }
}
