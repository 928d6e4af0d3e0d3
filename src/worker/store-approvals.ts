import { AsyncLocalStorage } from 'node:async_hooks'
import type { LedgerHooks } from '../loop/hook-types.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import { permissionPlugin, type PermissionAnswer, type PermissionQuestion, type PermissionRules } from '../plugins/permission.js'
import type { PostgresStore } from '../store/postgres/postgres-store.js'

/** Options of {@link storeApprovalPlugin}. */
export interface StoreApprovalOptions {
  /** The worker's store: questions are stored in its `approvals` table, answers read from it. */
  readonly store: PostgresStore
  /** The permission rules; calls they leave at `ask` wait for an answer through the store. */
  readonly rules?: PermissionRules
  /** Re-read the answer at least this often while waiting (ms, default 1000): the NOTIFY's fallback. */
  readonly pollMs?: number
}

const VERDICT_ANSWERS = { allow: 'yes', deny: 'no', always: 'always' } as const

/**
 * The permission plugin for workers whose questions are answered by people elsewhere (through `ledgerloop
 * serve`'s API and page): a call the rules leave at `ask` is stored as a pending approval under the session's
 * lease epoch, and the turn waits until someone answers it (`PostgresStore.answerApproval`). A cancelled turn
 * withdraws its question and the call is denied; a question whose worker died or lost the lease is void (the
 * new owner's crash repair closes that turn).
 * @example
 * ```ts
 * await runWorker({ store, adapters, tools, plugins: [storeApprovalPlugin({ store, rules: { allow: ['read_file'] } })] })
 * ```
 */
export function storeApprovalPlugin(options: StoreApprovalOptions): Plugin<HookRegistrar<LedgerHooks>> {
  const { store } = options
  const pollMs = options.pollMs ?? 1000
  // The permission plugin's question names the tool but not the session or the call: remember them here.
  const asking = new AsyncLocalStorage<{ readonly sessionId: string; readonly callId: string }>()
  const ask = async (question: PermissionQuestion): Promise<PermissionAnswer> => {
    const call = asking.getStore()
    if (call === undefined) return 'no'
    const { sessionId, callId } = call
    let wake: (() => void) | undefined
    let poked = false
    const off = store.onApprovals((id) => {
      if (id !== sessionId) return
      poked = true
      wake?.()
    })
    const onAbort = (): void => wake?.()
    question.signal.addEventListener('abort', onAbort)
    try {
      await store.askApproval(sessionId, callId, { tool: question.tool, args: question.arguments, subject: question.subject, reason: question.reason })
      while (!question.signal.aborted) {
        poked = false
        const verdict = await store.takeApprovalAnswer(sessionId, callId)
        if (verdict !== undefined) return VERDICT_ANSWERS[verdict]
        if (poked || question.signal.aborted) continue
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, pollMs)
          function done(): void {
            clearTimeout(timer)
            resolve()
          }
          wake = done
        })
        wake = undefined
      }
      // A cancelled turn withdraws its question.
      await store.withdrawApproval(sessionId, callId).catch(() => undefined)
      return 'no'
    } finally {
      off()
      question.signal.removeEventListener('abort', onAbort)
    }
  }
  const permissions = permissionPlugin({ ...(options.rules !== undefined ? { rules: options.rules } : {}), ask })
  return {
    name: 'ledgerloop/store-approvals',
    setup(hooks) {
      const offCall = hooks.on('tools/approve', (payload, next) => asking.run({ sessionId: payload.agent.id, callId: payload.call.callId }, () => next()), { prepend: true })
      const offPermissions = permissions.setup(hooks)
      return () => {
        offCall()
        if (typeof offPermissions === 'function') offPermissions()
      }
    },
  }
}
