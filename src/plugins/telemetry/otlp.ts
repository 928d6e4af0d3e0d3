import { randomBytes } from 'node:crypto'
import { HarnessError } from '../../errors/harness-error.js'
import type { SpanAttributes, SpanAttributeValue, SpanEnd, SpanSink, SpanStart } from './spans.js'

/** An open span of an {@link OtlpTraceBatch}. */
export interface OtlpOpenSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly start: SpanStart
}

/** OTLP/JSON `AnyValue`. */
type AnyValue = { stringValue: string } | { boolValue: boolean } | { intValue: string } | { doubleValue: number } | { arrayValue: { values: AnyValue[] } }

/** One span in OTLP/JSON (the `ExportTraceServiceRequest` encoding of OTLP over HTTP). */
export interface OtlpJsonSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: 1 | 3
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: readonly { readonly key: string; readonly value: AnyValue }[]
  readonly status: { readonly code: 1 | 2; readonly message?: string }
}

/** An `ExportTraceServiceRequest` body in OTLP/JSON. */
export interface OtlpTraceRequest {
  readonly resourceSpans: readonly {
    readonly resource: { readonly attributes: readonly { readonly key: string; readonly value: AnyValue }[] }
    readonly scopeSpans: readonly { readonly scope: { readonly name: string; readonly version?: string }; readonly spans: readonly OtlpJsonSpan[] }[]
  }[]
}

/**
 * A span sink that collects finished spans as OTLP/JSON, for export without an OpenTelemetry SDK (the CLI's
 * `trace` command and `--otlp`). Ids are random, as an SDK's are; a turn starts a new trace.
 */
export class OtlpTraceBatch implements SpanSink<OtlpOpenSpan> {
  readonly #finished: OtlpJsonSpan[] = []
  readonly #serviceName: string
  readonly #version: string | undefined

  constructor(options: { serviceName?: string; version?: string } = {}) {
    this.#serviceName = options.serviceName ?? 'ledgerloop'
    this.#version = options.version
  }

  /** Spans finished and not yet taken. */
  get size(): number {
    return this.#finished.length
  }

  start(span: SpanStart, parent: OtlpOpenSpan | undefined): OtlpOpenSpan {
    return { traceId: parent?.traceId ?? randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), parentSpanId: parent?.spanId, start: span }
  }

  end(handle: OtlpOpenSpan, end: SpanEnd): void {
    const { start } = handle
    this.#finished.push({
      traceId: handle.traceId,
      spanId: handle.spanId,
      ...(handle.parentSpanId !== undefined ? { parentSpanId: handle.parentSpanId } : {}),
      name: start.name,
      kind: start.kind === 'client' ? 3 : 1,
      startTimeUnixNano: unixNanos(start.startTime),
      endTimeUnixNano: unixNanos(end.endTime),
      attributes: keyValues({ ...start.attributes, ...end.attributes }),
      status: end.status.code === 'ok' ? { code: 1 } : { code: 2, ...(end.status.message !== undefined ? { message: end.status.message } : {}) },
    })
  }

  /** The finished spans as one export request (and forgets them), or undefined when there are none. */
  take(): OtlpTraceRequest | undefined {
    if (this.#finished.length === 0) return undefined
    const spans = this.#finished.splice(0)
    return {
      resourceSpans: [
        {
          resource: { attributes: keyValues({ 'service.name': this.#serviceName }) },
          scopeSpans: [{ scope: { name: 'ledgerloop', ...(this.#version !== undefined ? { version: this.#version } : {}) }, spans }],
        },
      ],
    }
  }
}

/**
 * The traces URL for an OTLP/HTTP endpoint: a base endpoint (as in `OTEL_EXPORTER_OTLP_ENDPOINT`) gets
 * `/v1/traces` appended; a URL already ending in `/v1/traces` is used as it is.
 * @throws HarnessError `INVALID_CONFIG` for anything but an http(s) URL
 */
export function otlpTracesUrl(endpoint: string): string {
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    throw new HarnessError(`OTLP endpoint ${JSON.stringify(endpoint)} is not a URL`, 'INVALID_CONFIG')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new HarnessError(`OTLP endpoint ${endpoint} must be http(s) (OTLP over HTTP)`, 'INVALID_CONFIG')
  if (url.pathname.endsWith('/v1/traces')) return url.toString()
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`
  return url.toString()
}

/** Parses `OTEL_EXPORTER_OTLP_HEADERS` (`k1=v1,k2=v2`, values URL-encoded). */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return headers
}

/**
 * POSTs one export request as OTLP/JSON.
 * @throws HarnessError `OTLP_EXPORT_FAILED` when the receiver cannot be reached or answers with an error status
 * (the message names the URL and status, never the headers, which may hold credentials)
 */
export async function postOtlpTraces(url: string, body: OtlpTraceRequest, headers: Readonly<Record<string, string>> = {}, timeoutMs = 10_000): Promise<void> {
  let response: Response
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (error) {
    throw new HarnessError(`cannot send spans to ${url}: ${(error as Error).message}`, 'OTLP_EXPORT_FAILED', { cause: error })
  }
  await response.arrayBuffer().catch(() => undefined)
  if (!response.ok) throw new HarnessError(`the OTLP receiver at ${url} answered ${response.status}`, 'OTLP_EXPORT_FAILED')
}

function unixNanos(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString()
}

function keyValues(attributes: SpanAttributes): { key: string; value: AnyValue }[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }))
}

function anyValue(value: SpanAttributeValue): AnyValue {
  if (typeof value === 'string') return { stringValue: value }
  if (typeof value === 'boolean') return { boolValue: value }
  if (typeof value === 'number') return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value }
  return { arrayValue: { values: value.map((v) => ({ stringValue: v })) } }
}
