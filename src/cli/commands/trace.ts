import type { Command } from 'commander'
import { buildSessionSpans } from '../../plugins/telemetry/spans.js'
import { OtlpTraceBatch, parseOtlpHeaders, postOtlpTraces } from '../../plugins/telemetry/otlp.js'
import { CliError, EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { otlpEndpoint } from '../../app/telemetry-setup.js'
import { addStoreOption } from './agent-options.js'

/** Options of `ledgerloop trace`. */
export interface TraceFlags {
  readonly otlp?: string
  readonly captureContent?: boolean
  readonly store?: string
}

/**
 * `ledgerloop trace ID --otlp URL`: builds the session's spans from its log (the same spans the live
 * telemetry plugin makes, with the logged times) and sends them over OTLP/HTTP as JSON. A turn still open is
 * not sent (its spans have no end yet).
 */
export async function traceCommand(ref: string, flags: TraceFlags, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const url = otlpEndpoint(flags.otlp, env)
  if (url === undefined) throw new CliError('where to? pass --otlp URL (or set OTEL_EXPORTER_OTLP_ENDPOINT)', EXIT.usage)
  const { store, id } = await openForReading(flags.store, ref)
  let stored
  try {
    stored = await store.read(id)
  } finally {
    await store.close()
  }
  const batch = new OtlpTraceBatch(env.OTEL_SERVICE_NAME !== undefined && env.OTEL_SERVICE_NAME !== '' ? { serviceName: env.OTEL_SERVICE_NAME } : {})
  buildSessionSpans(stored.header.id, stored.events, batch, { captureContent: flags.captureContent === true })
  const count = batch.size
  const body = batch.take()
  if (body === undefined) {
    process.stdout.write(`session ${id} has no finished turn: nothing to send\n`)
    return EXIT.ok
  }
  await postOtlpTraces(url, body, parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS))
  process.stdout.write(`sent ${count} spans of session ${id} to ${url}\n`)
  return EXIT.ok
}

/** Adds `trace` to the program (one line in main.ts). */
export function registerTraceCommand(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('trace'))
    .description('export a stored session as OpenTelemetry spans over OTLP/HTTP')
    .argument('<id>', 'session id (a unique prefix is enough)')
    .option('--otlp <url>', 'OTLP/HTTP endpoint (default: $OTEL_EXPORTER_OTLP_ENDPOINT); /v1/traces is added unless present')
    .option('--capture-content', 'include prompts, outputs and tool arguments/results in the spans')
    .action(async (id: string, flags: TraceFlags) => {
      exit.code = await traceCommand(id, flags)
    })
}
