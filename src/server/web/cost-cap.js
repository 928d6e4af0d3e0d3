// Spend against a session's cost cap, from the server's `costCap` figure (the cap its log records, every request
// attempt billed): the same sentence `inspect` and the chat/run footer print. Nothing when the session has no cap.
import { html } from './html.js'

export function CostCap({ cap }) {
  if (cap === undefined) return ''
  const reached = cap.spentUsd >= cap.maxUsd || cap.stoppedTurns.length > 0
  const whose = cap.origin === 'session' ? "this session's own cap" : "the server's --max-cost"
  const stopped = cap.stoppedTurns.length > 0 ? `; stopped turn${cap.stoppedTurns.length === 1 ? '' : 's'} ${cap.stoppedTurns.join(', ')}` : ''
  return html`<span class=${`cost-cap${reached ? ' reached' : ''}`} title=${`${whose}, billed over every request attempt (failed and retried ones included)${stopped}`}>
    ${cap.summary}
    ${cap.unpricedModels.map((model) => html` <span class="cost-cap-warning" role="note">⚠ no price for ${model}: not counted against the cap</span>`)}
  </span>`
}
