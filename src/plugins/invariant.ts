// The invariant companions as one plugin (tests run with it, production may leave it out): log grammar on
// every append, reconstruction of every loop-built request, chunk grammar of every stream.
import { InvariantError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import { StreamGrammar } from '../llm/stream-grammar.js'
import type { GenerateOptions, StreamChunk } from '../llm/types.js'
import { LogGrammar } from '../session/log-grammar.js'
import type { Session } from '../session/session.js'
import { foldMessages } from '../session/surface.js'
import { foldRequestHeader } from '../session/request-header.js'
import type { LedgerHooks } from '../loop/hook-types.js'

/** Options of {@link invariantPlugin}. */
export interface InvariantOptions {
  /**
   * Also re-fold the whole log from scratch before every request and compare (catches incremental-fold bugs;
   * O(log) per request, for tests). Default true.
   */
  readonly fullRefold?: boolean
}

/**
 * The invariant companions (seed §6, LOOP-REQUEST-INVARIANT; docs/architecture.md, "Invariant companions"): on
 * every append, the log grammar (a violation vetoes the append); on every loop-built request, reconstruction —
 * the request is frozen, its messages equal a fresh fold of the log, and its header fields equal the latest
 * logged header; and every stream obeys the chunk grammar.
 * A stream must end with a `finish` chunk. Violations throw `InvariantError` (code `INVARIANT`). Tests run with it; production may leave it out.
 */
export function invariantPlugin(options: InvariantOptions = {}): Plugin<HookRegistrar<LedgerHooks>> {
  const fullRefold = options.fullRefold ?? true
  return {
    name: 'ledgerloop/invariant',
    setup(hooks) {
      // The grammar follows the committed log, never a candidate: an append refused after this check (by
      // another guard or the store) must not leave the grammar one event ahead of the log.
      const grammars = new WeakMap<Session, { readonly grammar: LogGrammar; applied: number }>()
      const committedGrammar = (session: Session): LogGrammar => {
        let state = grammars.get(session)
        if (state === undefined) {
          state = { grammar: new LogGrammar(), applied: 0 }
          grammars.set(session, state)
        }
        for (; state.applied < session.length; state.applied++) state.grammar.check(session.at(state.applied) as never)
        return state.grammar
      }
      const sessions = new Map<string, Session>()
      const offValidate = hooks.on('session/validate', ({ session, event }) => {
        sessions.set(session.id, session)
        const problem = committedGrammar(session).peek(event)
        if (problem !== undefined) throw new InvariantError(`log grammar: ${problem}`)
      })
      const offStream = hooks.on(
        'llm/stream',
        async (request, next) => {
          if (request.origin === 'loop') checkRequest(request, sessions.get(request.sessionId ?? ''), fullRefold)
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
  if (!same(request.output, header.config.output)) fail('output differs from the header')
  if (!same(request.tools ?? [], header.tools ?? [])) fail('tools differ from the header')
}

async function* checkedStream(source: AsyncIterable<StreamChunk>): AsyncGenerator<StreamChunk> {
  const grammar = new StreamGrammar()
  for await (const chunk of source) {
    const problem = grammar.check(chunk)
    if (problem !== undefined) throw new InvariantError(`stream grammar: ${problem}`)
    yield chunk
  }
  // A stream that just stops (custom middleware, custom adapter) is not a completed reply.
  const unfinished = grammar.end()
  if (unfinished !== undefined) throw new InvariantError(`stream grammar: ${unfinished}`)
}
