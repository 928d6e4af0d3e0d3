import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { LedgerHooks } from '../loop/hook-types.js'
import { sessionSpansPlugin } from '../plugins/telemetry/telemetry.js'
import { OtlpTraceBatch, otlpTracesUrl, parseOtlpHeaders, postOtlpTraces } from '../plugins/telemetry/otlp.js'
import { SessionSpanBuilder } from '../plugins/telemetry/spans.js'
import { UsageError } from './usage-error.js'

/**
 * Where the CLI sends spans: `--otlp URL`, else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is), else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`); undefined when none is set.
 */
export function otlpEndpoint(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== ''
  try {
    if (set(flag)) return otlpTracesUrl(flag)
    const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    if (set(traces)) {
      otlpTracesUrl(traces) // validates; the signal-specific variable is used as it is, per the OTLP exporter spec
      return traces
    }
    const base = env.OTEL_EXPORTER_OTLP_ENDPOINT
    return set(base) ? otlpTracesUrl(base) : undefined
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/** Live span export of a CLI run. */
export interface CliTelemetry {
  readonly plugin: Plugin<HookRegistrar<LedgerHooks>>
  /** Sends what is left and waits for every export in flight (failures were already reported). */
  shutdown(): Promise<void>
}

/**
 * Spans of every turn, sent to `url` as OTLP/JSON when the turn ends. An unreachable receiver costs a warning
 * on stderr, never the turn.
 */
export function cliTelemetry(url: string, env: NodeJS.ProcessEnv = process.env, warn: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): CliTelemetry {
  const batch = new OtlpTraceBatch(env.OTEL_SERVICE_NAME !== undefined && env.OTEL_SERVICE_NAME !== '' ? { serviceName: env.OTEL_SERVICE_NAME } : {})
  const headers = parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS)
  const inFlight = new Set<Promise<void>>()
  const send = (): void => {
    const body = batch.take()
    if (body === undefined) return
    const sent = postOtlpTraces(url, body, headers)
      .catch((error: unknown) => warn(`ledgerloop: telemetry: ${(error as Error).message}`))
      .finally(() => inFlight.delete(sent))
    inFlight.add(sent)
  }
  const spans = sessionSpansPlugin('ledgerloop/otlp', (sessionId) => new SessionSpanBuilder(sessionId, batch))
  const plugin: Plugin<HookRegistrar<LedgerHooks>> = {
    name: 'ledgerloop/otlp',
    setup(hooks) {
      const offSpans = spans.setup(hooks)
      // Registered after the builder, so the turn's spans are closed when this runs.
      const offSend = hooks.on('session/event', ({ event }) => {
        if (event.type === 'turn/end') send()
      })
      return () => {
        if (typeof offSpans === 'function') offSpans()
        offSend()
      }
    },
  }
  return {
    plugin,
    async shutdown() {
      send()
      await Promise.allSettled([...inFlight])
    },
  }
}
