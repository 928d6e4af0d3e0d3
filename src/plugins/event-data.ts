// The log-only event types of ledgerloop's own plugins, declared into SessionEventDataMap the same way a user's
// plugin declares its own (docs/events.md), so `event.type === 'llm/retry'` narrows `event.data` as a core type
// does. Types only: nothing here runs.
import type { CostBudgetExceededData, CostBudgetUnpricedData } from './cost-budget.js'
import type { CostBudgetCapData } from '../views/cost-cap.js'
import type { CompactionEndData, CompactionStartData } from './compaction/replace.js'
import type { CompactionPruneData } from './compaction/prune.js'
import type { CompactionRequestData, CompactionSummaryData } from './compaction/summary.js'
import type { PermissionDecisionData } from './permission.js'
import type { RetryEventData } from './retry.js'
import type { BudgetExceededData } from './turn-budget.js'

declare module '../session/events.js' {
  interface SessionEventDataMap {
    'llm/retry': RetryEventData
    'permission/decision': PermissionDecisionData
    /** Written by the turn budget (`steps`, `tokens`), the sub-agent tool (`steps`) and the cost budget (`cost`). */
    'budget/exceeded': BudgetExceededData | CostBudgetExceededData
    'cost-budget/unpriced': CostBudgetUnpricedData
    /** Written by the cost budget (its default cap) and by a server creating a session with its own cap. */
    'cost-budget/cap': CostBudgetCapData
    'compaction/start': CompactionStartData
    'compaction/prune': CompactionPruneData
    'compaction/request': CompactionRequestData
    'compaction/summary': CompactionSummaryData
    'compaction/end': CompactionEndData
  }
}
