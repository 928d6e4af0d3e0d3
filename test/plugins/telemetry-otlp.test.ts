import { createServer, type Server } from 'node:http'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore, telemetryPlugin } from '../../src/index.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { fromReadable, plainSpans, runTelemetrySession, type PlainSpan } from './telemetry-session.js'

interface Received {
  readonly path: string
  readonly contentType: string | undefined
  readonly authorization: string | undefined
  readonly body: {
    resourceSpans: {
      resource: { attributes: { key: string; value: Record<string, unknown> }[] }
      scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[]
    }[]
  }
}

interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  startTimeUnixNano: string
  endTimeUnixNano: string
  attributes: { key: string; value: Record<string, unknown> }[]
  status: { code: number; message?: string }
}

/** A loopback OTLP/HTTP receiver that keeps every request it gets. */
async function otlpReceiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = []
  const server: Server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (d: string) => (text += d))
    req.on('end', () => {
      received.push({ path: req.url ?? '', contentType: req.headers['content-type'], authorization: req.headers.authorization, body: JSON.parse(text) as Received['body'] })
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { url: `http://127.0.0.1:${port}`, received, close: () => new Promise((r) => server.close(() => r())) }
}

function attributeValue(value: Record<string, unknown>): unknown {
  if ('stringValue' in value) return value.stringValue
  if ('intValue' in value) return Number(value.intValue)
  if ('doubleValue' in value) return value.doubleValue
  if ('boolValue' in value) return value.boolValue
  const array = value.arrayValue as { values: Record<string, unknown>[] }
  return array.values.map(attributeValue)
}

function fromOtlp(requests: readonly Received[]): PlainSpan[] {
  const spans = requests.flatMap((r) => r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)))
  return plainSpans(
    spans.map((s) => ({
      id: s.spanId,
      parentId: s.parentSpanId,
      name: s.name,
      kind: s.kind === 3 ? 'client' : 'internal',
      start: Number(BigInt(s.startTimeUnixNano) / 1000n) / 1000,
      end: Number(BigInt(s.endTimeUnixNano) / 1000n) / 1000,
      status: { code: s.status.code === 1 ? 'OK' : s.status.code === 2 ? 'ERROR' : 'UNSET', ...(s.status.message !== undefined ? { message: s.status.message } : {}) },
      attributes: Object.fromEntries(s.attributes.map((a) => [a.key, attributeValue(a.value)])),
    })),
  )
}

describe('ledgerloop trace', () => {
  let home = ''
  let sessionId = ''
  let live: PlainSpan[] = []
  beforeAll(async () => {
    ensureBuilt()
    home = tempHome()
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const { agent, close } = await runTelemetrySession({ store: new JsonlStore({ dir: join(home, 'sessions') }), plugins: [telemetryPlugin({ tracerProvider: provider })] })
    await close()
    sessionId = agent.id
    live = fromReadable(exporter.getFinishedSpans())
  }, 120_000)
  afterAll(() => rmSync(home, { recursive: true, force: true }))

  it('TRACE-OTLP: a stored session sent to a loopback OTLP receiver arrives as the same spans the live plugin made', async () => {
    const receiver = await otlpReceiver()
    try {
      const run = await runCli(['trace', sessionId, '--otlp', receiver.url], { env: cliEnv(home) })
      expect(run.stderr).toBe('')
      expect(run.code).toBe(0)
      expect(run.stdout).toContain(`sent 9 spans of session ${sessionId} to ${receiver.url}/v1/traces`)
      expect(receiver.received).toHaveLength(1)
      const request = receiver.received[0] as Received
      expect(request.path).toBe('/v1/traces')
      expect(request.contentType).toBe('application/json')
      expect(request.body.resourceSpans[0]?.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'ledgerloop' } })
      expect(request.body.resourceSpans[0]?.scopeSpans[0]?.scope.name).toBe('ledgerloop')
      // Names, tree, attributes, statuses and times: identical to what the in-memory exporter saw live.
      expect(fromOtlp(receiver.received)).toEqual(live)
    } finally {
      await receiver.close()
    }
  })

  it('TRACE-ENV: OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS are honoured; without an endpoint it is a usage error', async () => {
    const receiver = await otlpReceiver()
    try {
      const run = await runCli(['trace', sessionId], {
        env: cliEnv(home, { OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/otel/`, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20t0ken' }),
      })
      expect(run.code).toBe(0)
      expect(receiver.received.map((r) => [r.path, r.authorization])).toEqual([['/otel/v1/traces', 'Bearer t0ken']])
      expect(run.stdout + run.stderr).not.toContain('t0ken')
    } finally {
      await receiver.close()
    }
    const missing = await runCli(['trace', sessionId], { env: cliEnv(home) })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--otlp URL')
    const down = await runCli(['trace', sessionId, '--otlp', 'http://127.0.0.1:9'], { env: cliEnv(home, { OTEL_EXPORTER_OTLP_HEADERS: 'x-key=s3cret' }) })
    expect(down.code).toBe(1)
    expect(down.stderr).toContain('OTLP_EXPORT_FAILED')
    expect(down.stderr).not.toContain('s3cret')
  })
})
