// Which key presses the page's lists may take: arrows and friends pressed while focus is on nothing that
// uses them itself (not a text box, a select, a button or a link), so ↑/↓ work without clicking a list first.

const LIST_KEYS = new Set(['ArrowDown', 'ArrowUp', 'PageDown', 'PageUp', 'Home', 'End', 'Enter', 'j', 'k'])

/** True when a document-level keydown should move a list's selection. */
export function wantsPageKeys(event) {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) return false
  if (!LIST_KEYS.has(event.key)) return false
  const target = event.target
  if (!(target instanceof Element)) return true
  if (target.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"], .conversation') !== null) return false
  // Enter on a button or link is that control's own.
  if (event.key === 'Enter' && target.closest('button, a, summary') !== null) return false
  return true
}
