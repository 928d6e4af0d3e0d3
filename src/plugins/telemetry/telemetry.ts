import { createRequire } from 'node:module'
import type { Context, Span, Tracer } from '@opentelemetry/api'
import type { LedgerHooks } from '../../loop/hook-types.js'
import { HarnessError } from '../../errors/harness-error.js'
import type { Plugin } from '../../hooks/hook-bus.js'
import type { HookRegistrar } from '../../hooks/types.js'
import type { Message } from '../../llm/types.js'
import type { SessionEvent } from '../../session/events.js'
import { SessionSpanBuilder, buildSessionSpans, type SpanSink } from './spans.js'

/**
 * What {@link telemetryPlugin} needs of an OpenTelemetry `TracerProvider`: any provider of `@opentelemetry/api`
 * or an SDK fits. Declared here rather than imported, so that the package's types compile for a consumer who
 * does not install the optional `@opentelemetry/api` (with `skipLibCheck: false` too).
 */
export interface TelemetryTracerProvider {
  /** Returns an OpenTelemetry `Tracer` for the instrumentation scope `name`. */
  getTracer(name: string, version?: string): unknown
}

/** Options of {@link telemetryPlugin}. */
export interface TelemetryPluginOptions {
  /** Where spans go (default: the global provider registered with `@opentelemetry/api`). */
  readonly tracerProvider?: TelemetryTracerProvider
  /**
   * Record message contents (prompts, outputs, system prompt, tool arguments and results) as the
   * `gen_ai.*.messages` / `gen_ai.tool.call.*` attributes. Default false: spans carry names, ids, models,
   * token counts, reasons and error codes only.
   */
  readonly captureContent?: boolean
}

/** The instrumentation scope of every span. */
export const TELEMETRY_SCOPE = 'ledgerloop'

type OtelApi = typeof import('@opentelemetry/api')

let api: OtelApi | undefined

// Loaded synchronously because plugins set up synchronously; the API keeps its registry on a global symbol,
// so this copy and the one an application imports share the tracer provider and context keys.
function loadApi(): OtelApi {
  if (api !== undefined) return api
  try {
    api = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi
    return api
  } catch (error) {
    throw new HarnessError('telemetryPlugin needs the optional dependency @opentelemetry/api: npm install @opentelemetry/api@1.10.0', 'MISSING_DEPENDENCY', { cause: error })
  }
}

/** Spans through an OpenTelemetry tracer. A turn's span is a child of whatever span is active (else a root). */
function tracerSink(tracer: Tracer, otel: OtelApi, rootContext: () => Context): SpanSink<Span> {
  return {
    start(span, parent) {
      const context = parent === undefined ? rootContext() : otel.trace.setSpan(otel.ROOT_CONTEXT, parent)
      const kind = span.kind === 'client' ? otel.SpanKind.CLIENT : otel.SpanKind.INTERNAL
      return tracer.startSpan(span.name, { kind, startTime: span.startTime, attributes: span.attributes as Record<string, string | number | boolean | string[]> }, context)
    },
    end(handle, end) {
      handle.setAttributes(end.attributes as Record<string, string | number | boolean | string[]>)
      handle.setStatus(end.status.code === 'ok' ? { code: otel.SpanStatusCode.OK } : { code: otel.SpanStatusCode.ERROR, ...(end.status.message !== undefined ? { message: end.status.message } : {}) })
      handle.end(end.endTime)
    },
  }
}

function tracerOf(options: TelemetryPluginOptions, otel: OtelApi): Tracer {
  // A provider passed in is an OpenTelemetry provider by contract (TelemetryTracerProvider only spells out the
  // one method, so the public types need not import the optional peer).
  const provider = options.tracerProvider ?? otel.trace.getTracerProvider()
  return provider.getTracer(TELEMETRY_SCOPE) as Tracer
}

/**
 * OpenTelemetry traces of every agent, built from its session events (GenAI semantic conventions): an
 * `invoke_agent ledgerloop` span per turn (status from the turn's end reason), a `chat {model}` span per model
 * request attempt (model, token usage with cache reads, finish reason, retry attempt), an `execute_tool {tool}`
 * span per tool call; each carries the session id (`gen_ai.conversation.id`), turn and step. Message contents are
 * recorded only with `captureContent: true`. Needs `@opentelemetry/api` (an optional peer dependency) and a
 * tracer provider — yours, or the registered global one.
 * @example
 * ```ts
 * import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
 * const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] })
 * createHarness({ plugins: [telemetryPlugin({ tracerProvider })] })
 * ```
 * @throws HarnessError `MISSING_DEPENDENCY` when `@opentelemetry/api` is not installed
 */
export function telemetryPlugin(options: TelemetryPluginOptions = {}): Plugin<HookRegistrar<LedgerHooks>> {
  const otel = loadApi()
  const tracer = tracerOf(options, otel)
  const sink = tracerSink(tracer, otel, () => otel.context.active())
  return sessionSpansPlugin(
    'ledgerloop/telemetry',
    (sessionId, session) => new SessionSpanBuilder(sessionId, sink, { ...options, currentMessages: () => session.deriveMessages() }),
  )
}

/**
 * Exports a stored session as spans after the fact: the same spans, times and attributes the live plugin
 * produced (each turn a root span). For the OTLP/HTTP route without an SDK, see `ledgerloop trace ID --otlp URL`.
 * @example
 * ```ts
 * const { events } = await store.read(id)
 * traceSession(id, events, { tracerProvider })
 * await tracerProvider.forceFlush()
 * ```
 */
export function traceSession(sessionId: string, events: readonly SessionEvent[], options: TelemetryPluginOptions = {}): void {
  const otel = loadApi()
  buildSessionSpans(sessionId, events, tracerSink(tracerOf(options, otel), otel, () => otel.ROOT_CONTEXT), options)
}

/**
 * A plugin that feeds each session's events to its own span builder (the CLI uses it with an OTLP/JSON sink).
 * A builder is made on the first event of a session it sees and kept (between turns it holds only the route
 * and the system prompt), since a request header is logged only when it changes.
 */
export function sessionSpansPlugin(
  name: string,
  makeBuilder: (sessionId: string, session: { deriveMessages(): Message[] }) => { observe(event: SessionEvent): void },
): Plugin<HookRegistrar<LedgerHooks>> {
  return {
    name,
    setup(hooks) {
      const builders = new Map<string, { observe(event: SessionEvent): void }>()
      return hooks.on('session/event', ({ session, event }) => {
        let builder = builders.get(session.id)
        if (builder === undefined) {
          builder = makeBuilder(session.id, session)
          builders.set(session.id, builder)
        }
        builder.observe(event)
      })
    },
  }
}
