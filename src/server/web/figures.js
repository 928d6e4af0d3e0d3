// How the page writes numbers, durations and times (the same forms as the CLI's `inspect`).

/** `1,234`. */
export function count(n) {
  return (n ?? 0).toLocaleString('en-US')
}

/** `850 ms`, `2.3 s`, `1 m 05 s`. */
export function duration(ms) {
  if (ms === undefined || ms === null) return ''
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`
}

/** `12 in · 4 out` with the cache share when there is one. */
export function tokens(usage) {
  if (usage === undefined || usage === null) return '—'
  const cache = usage.cacheRead > 0 ? ` (${count(usage.cacheRead)} cached)` : ''
  return `${count(usage.input)} in${cache} · ${count(usage.output)} out`
}

/** `2026-12-01 05:20:11` in local time. */
export function when(iso) {
  const d = new Date(iso)
  const p = (n) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

/** A status word as a CSS class suffix. */
export function tone(status) {
  switch (status) {
    case 'completed':
    case 'ok':
    case 'stop':
    case 'done':
    case 'idle':
      return 'good'
    case 'tool-calls':
      return 'info'
    case 'error':
    case 'failed':
      return 'bad'
    case 'aborted':
    case 'cancelled':
    case 'denied':
    case 'interrupted':
      return 'warn'
    case 'blocked':
    case 'max-tokens':
    case 'awaiting-approval':
    case 'waiting':
      return 'attention'
    case 'open':
    case 'running':
      return 'live'
    default:
      return 'plain'
  }
}

// A cost figure from the API ({total, currency}), or a dash when the model has no prices.
export function money(cost) {
  if (cost === undefined || cost === null) return '—'
  const symbol = cost.currency === 'USD' ? '$' : cost.currency === 'CNY' ? '¥' : `${cost.currency} `
  const digits = cost.total !== 0 && cost.total < 0.01 ? 4 : 2
  return `${symbol}${cost.total.toFixed(digits)}`
}
