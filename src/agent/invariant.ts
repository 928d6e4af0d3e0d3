import { InvariantError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import { StreamGrammar } from '../llm/stream-grammar.js'
import type { GenerateOptions, StreamChunk } from '../llm/types.js'
import { LogGrammar } from '../session/log-grammar.js'
import type { Session } from '../session/session.js'
import { foldMessages } from '../session/surface.js'
import { foldRequestHeader } from '../session/request-header.js'
import type { LedgerHooks } from './hook-types.js'
import { isLoopRequest } from './loop-request.js'

/** Options of {@link invariantPlugin}. */
export interface InvariantOptions {
  /**
   * Also re-fold the whole log from scratch before every request and compare (catches incremental-fold bugs;
   * O(log) per request, for tests). Default true.
   */
  readonly fullRefold?: boolean
}

/**
 * The invariant companions (reference §8): on every append, the log grammar (a violation vetoes the append);
 * on every loop-built request, reconstruction — the request is frozen, its messages equal a fresh fold of the
 * log, and its header fields equal the latest logged header; and every stream obeys the chunk grammar.
 * Violations throw `InvariantError` (code `INVARIANT`). Tests run with it; production may leave it out.
 */
export function invariantPlugin(options: InvariantOptions = {}): Plugin<HookRegistrar<LedgerHooks>> {
  const fullRefold = options.fullRefold ?? true
  return {
    name: 'ledgerloop/invariant',
    setup(hooks) {
      const grammars = new WeakMap<Session, LogGrammar>()
      const grammarOf = (session: Session): LogGrammar => {
        let g = grammars.get(session)
        if (g === undefined) {
          g = new LogGrammar()
          for (let seq = 0; seq < session.length; seq++) g.check(session.at(seq) as never)
          grammars.set(session, g)
        }
        return g
      }
      const sessions = new Map<string, Session>()
      const offValidate = hooks.on('session/validate', ({ session, event }) => {
        sessions.set(session.id, session)
        const problem = grammarOf(session).check(event)
        if (problem !== undefined) throw new InvariantError(`log grammar: ${problem}`)
      })
      const offStream = hooks.on(
        'llm/stream',
        async (request, next) => {
          if (isLoopRequest(request)) checkRequest(request, sessions.get(request.sessionId ?? ''), fullRefold)
          return checkedStream(await next())
        },
        { prepend: true },
      )
      return () => {
        offValidate()
        offStream()
      }
    },
  }
}

function checkRequest(request: GenerateOptions, session: Session | undefined, fullRefold: boolean): void {
  const fail = (why: string): never => {
    throw new InvariantError(`request reconstruction: ${why}`)
  }
  if (!Object.isFrozen(request) || !Object.isFrozen(request.messages)) fail('the loop request is not frozen')
  if (session === undefined) return fail(`no live session '${String(request.sessionId)}'`)
  const events = session.events
  if (!events.some((e) => e.type === 'step/start')) fail('no step/start before the request')
  const header = foldRequestHeader(events)
  if (header === undefined) return fail('no request/header before the request')
  const sent = JSON.stringify(request.messages)
  if (sent !== JSON.stringify(session.deriveMessages())) fail('messages differ from deriveMessages() (desync)')
  if (fullRefold && sent !== JSON.stringify(foldMessages(events))) fail('messages differ from a full fold of the log')
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)
  if (request.model !== header.config.model) fail(`model ${request.model} ≠ header ${header.config.model}`)
  if (request.system !== header.system) fail('system differs from the header')
  if (request.temperature !== header.config.temperature) fail('temperature differs from the header')
  if (request.maxTokens !== header.config.maxTokens) fail('maxTokens differs from the header')
  if (!same(request.stop, header.config.stop)) fail('stop differs from the header')
  if (!same(request.tools ?? [], header.tools ?? [])) fail('tools differ from the header')
}

async function* checkedStream(source: AsyncIterable<StreamChunk>): AsyncGenerator<StreamChunk> {
  const grammar = new StreamGrammar()
  for await (const chunk of source) {
    const problem = grammar.check(chunk)
    if (problem !== undefined) throw new InvariantError(`stream grammar: ${problem}`)
    yield chunk
  }
}
