import { readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import swagger from '@fastify/swagger'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import { HarnessError } from '../errors/harness-error.js'
import type { SessionStore } from '../store/types.js'
import { AccessGuard, generateToken, isLoopbackHost } from './access-guard.js'
import { answers, openapiSchema } from './api-schemas.js'
import { registerApiRoutes } from './api-routes.js'
import type { EventStreamOptions } from './event-stream.js'
import { clientErrorResponse, errorAnswer, errorBody, notFound } from './http-errors.js'
import { LocalSessionHost, type LocalSessionHostOptions } from './local-session-host.js'
import { loadPageFiles } from './page-files.js'
import { createValidatorCompiler } from './request-validation.js'
import { localRewinder, registerRewindRoutes } from './rewind-routes.js'
import { SessionDirectory } from './session-directory.js'
import type { SessionEventFeed, SessionInputPort } from './session-ports.js'
import type { PricingCatalogue } from '../views/cost.js'

/** Options of {@link createLedgerServer}. */
export interface LedgerServerOptions {
  /** Where sessions live. With the default session host the server owns it and closes it on `close()`. */
  readonly store: SessionStore
  /**
   * How sessions are run and followed. Default: a {@link LocalSessionHost} running the agents in this process
   * from `agents` (for JSONL and SQLite stores); a store-backed pair (PostgreSQL inbox + workers) goes here.
   */
  readonly sessions?: { readonly input: SessionInputPort; readonly feed: SessionEventFeed; readonly drain?: (graceMs: number) => Promise<void>; readonly close?: () => Promise<void> }
  /** What the default session host builds its harness from (required without `sessions`). */
  readonly agents?: Omit<LocalSessionHostOptions, 'store'>
  /**
   * The token every API request must carry. Default: a random one. `false` turns tokens off, which is only
   * allowed on a loopback host.
   */
  readonly token?: string | false
  /** Interface to listen on (default `127.0.0.1`). */
  readonly host?: string
  /** Port (default 4141; 0 picks a free one). */
  readonly port?: number
  /** Origins allowed besides the server's own (the public origin of a reverse proxy). */
  readonly allowedOrigins?: readonly string[]
  /** Largest request body in bytes (default 1 MiB); larger ones get 413. */
  readonly bodyLimit?: number
  /** Tuning of the Server-Sent Events tails. */
  readonly stream?: Omit<EventStreamOptions, 'onReady'>
  /** Prices for the cost figures of the list and the session view (e.g. `DEEPSEEK_MODELS`); none: no cost shown. */
  readonly pricing?: PricingCatalogue
}

/** A running (or ready to run) `serve` HTTP server. */
export interface LedgerServer {
  /** The Fastify instance (routes, `app.swagger()`). */
  readonly app: FastifyInstance
  /** The token clients must send, or undefined when tokens are off. */
  readonly token: string | undefined
  /** How sessions are run (the default host, when no `sessions` were given). */
  readonly input: SessionInputPort
  /** Starts listening; resolves to the base URL (`http://127.0.0.1:4141`). */
  listen(): Promise<string>
  /** The URL to open in a browser: the base URL with `?token=`. Only after `listen()`. */
  pageUrl(): string
  /**
   * Graceful stop, first half: refuses new input (503) and lets the turns this server runs finish for `graceMs`
   * (a fleet's turns run in its workers: nothing to wait for). Then call `close()`.
   */
  drain(graceMs: number): Promise<void>
  /** Stops listening, ends every stream, stops every session the server runs and closes the store. */
  close(): Promise<void>
}

function decodedPath(url: string): string {
  const path = url.split('?')[0] ?? ''
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

/**
 * Answers a request that Node's HTTP parser refused (Fastify's `clientErrorHandler`). The response is written,
 * the connection half-closed, and whatever the client is still sending (the rest of a 100 KB header) is read and
 * dropped until it closes its side: closing a socket with unread data makes the kernel send a reset, which can
 * destroy the response before the client reads it.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  const response = socket.destroyed || !socket.writable ? undefined : clientErrorResponse(error)
  if (response === undefined) {
    socket.destroy()
    return
  }
  socket.on('error', () => socket.destroy())
  socket.end(response)
  socket.resume()
  // A client that never closes its side is cut off after a grace period.
  const linger = setTimeout(() => socket.destroy(), 5000)
  linger.unref()
  socket.once('close', () => clearTimeout(linger))
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

/**
 * Builds the `serve` HTTP server: the JSON API of docs/serve.md ("The API"), Server-Sent Events tails, the
 * OpenAPI document at `/api/openapi.json`, and the web page at `/`. Every `/api/` route needs the token; a
 * request from a foreign `Origin` is refused; bodies are size-limited and validated.
 * @example
 * ```ts
 * const server = await createLedgerServer({
 *   store: new JsonlStore({ dir: './sessions' }),
 *   agents: { adapters: [deepseekAdapter()], tools: builtinTools({ root: '.' }), defaults: { provider: 'deepseek', model: 'deepseek-chat' } },
 * })
 * await server.listen()
 * console.log(server.pageUrl())
 * ```
 */
export async function createLedgerServer(options: LedgerServerOptions): Promise<LedgerServer> {
  const host = options.host ?? '127.0.0.1'
  if (options.token === false && !isLoopbackHost(host)) {
    throw new HarnessError(`a server without a token may only listen on a loopback host, not ${host}`, 'INVALID_CONFIG')
  }
  const token = options.token === false ? undefined : (options.token ?? generateToken())
  let sessions = options.sessions
  if (sessions === undefined) {
    if (options.agents === undefined) throw new HarnessError('createLedgerServer needs `agents` (or `sessions`)', 'INVALID_CONFIG')
    const local = new LocalSessionHost({ ...(options.pricing !== undefined ? { pricing: options.pricing } : {}), ...options.agents, store: options.store })
    sessions = { input: local, feed: local, drain: (graceMs) => local.drain(graceMs), close: () => local.close() }
  }
  const { input, feed } = sessions
  const guard = new AccessGuard({ token, ...(options.allowedOrigins !== undefined ? { allowedOrigins: options.allowedOrigins } : {}) })
  const page = loadPageFiles()

  let closing = false
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    // Streams stay open until their clients leave: closing must not wait for them.
    forceCloseConnections: true,
    // Fastify's own 503 while closing has its own body shape; the onRequest hook answers ours instead.
    return503OnClosing: false,
    // Above the longest id and call id the schemas allow, so an over-long one is a 400 from its schema rather
    // than a route that does not match.
    routerOptions: { maxParamLength: 500 },
    // A URL the router cannot decode (`%ff`) or a parameter past maxParamLength never reaches a route: answered
    // here, in the API's error shape.
    frameworkErrors: (error, _request, reply) => {
      const { status, body } = errorAnswer(error)
      // The option is generic over route types that do not exist yet at this point: the reply is a plain one.
      return (reply as FastifyReply).code(status).send(body)
    },
    // Requests Node's HTTP parser refuses (a header block over its limit, a request line that is not HTTP) get
    // an answer in the same shape rather than a closed connection; see answerClientError.
    clientErrorHandler: answerClientError,
  })
  // Bodies are validated as sent (no coercion, unknown fields refused); paths and query strings are coerced.
  app.setValidatorCompiler(createValidatorCompiler())
  // Answers are sent as built. The response schemas are the OpenAPI document's description of them, not a
  // serialiser: Fastify's would silently drop any field a schema does not name.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))

  app.addHook('onRequest', async (request, reply) => {
    if (closing) return reply.code(503).header('connection', 'close').send(errorBody('SERVER_CLOSING', 'the server is shutting down'))
    const wrongHost = guard.checkHost(request.headers)
    if (wrongHost !== undefined) return reply.code(wrongHost.status).send(errorBody(wrongHost.code, wrongHost.message))
    const refusal = guard.checkOrigin(request.headers)
    if (refusal !== undefined) return reply.code(refusal.status).send(errorBody(refusal.code, refusal.message))
    // Decide by the route that matched (the router decodes the path: `/%61pi/…` is an API route too); only
    // the page's own route is open, and only for paths that do not name the API in any spelling.
    const pageRoute = request.routeOptions.url === '/*' && !/^\/+api(\/|$)/i.test(decodedPath(request.url))
    if (pageRoute) return undefined
    const query = request.query as Record<string, unknown> | undefined
    const queryToken = typeof query?.token === 'string' ? query.token : undefined
    const denied = guard.checkToken(request.headers, queryToken)
    if (denied !== undefined) return reply.code(denied.status).send(errorBody(denied.code, denied.message))
    // The token is not a parameter of any route: it must not trip a route's query validation.
    if (query !== undefined) delete query.token
    return undefined
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff')
    // The page's URL may carry the token: never leak it to another site.
    reply.header('referrer-policy', 'no-referrer')
    return payload
  })
  app.setErrorHandler((error, _request, reply) => {
    const { status, body } = errorAnswer(error)
    // A 500 is a bug worth its stack; a 503 (database unreachable, shutting down) is a state, one line says it.
    if (status === 500) process.stderr.write(`ledgerloop serve: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    else if (status > 500) process.stderr.write(`ledgerloop serve: ${body.error.code}: ${body.error.message}\n`)
    return reply.code(status).send(body)
  })
  app.setNotFoundHandler((request, reply) => reply.code(404).send(notFound(`no route ${request.method} ${request.url.split('?')[0] ?? ''}`)))

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'ledgerloop serve', version: packageVersion(), description: 'Sessions, live event tails, input, approvals and views of a ledgerloop session store.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  })

  registerApiRoutes(app, {
    input,
    feed,
    directory: new SessionDirectory(options.store, feed, input, options.pricing),
    ...(options.stream !== undefined ? { stream: options.stream } : {}),
    ...(options.pricing !== undefined ? { pricing: options.pricing } : {}),
    // The tool root of the sessions run here (LocalSessionHost's default is the current folder, too).
    ...(options.sessions === undefined ? { toolRoot: options.agents?.cwd ?? process.cwd() } : {}),
  })
  registerRewindRoutes(app, {
    input,
    feed,
    blobs: options.store.checkpointBlobs,
    // Files can only be put back where the sessions run: in this process (a fleet's run on its workers).
    ...(input instanceof LocalSessionHost ? { rewinder: localRewinder(input, options.store) } : {}),
  })
  app.get('/api/openapi.json', { schema: { summary: 'This document', tags: ['meta'], response: answers({ 200: openapiSchema }, [401, 403, 500, 503]) } }, async () => app.swagger())

  // The page: a fixed set of files loaded at start, so a path can only ever name one of them.
  app.get('/*', { schema: { hide: true } }, async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const file = page.files.get(path === '/index.html' ? '/' : path)
    if (file === undefined) return reply.code(404).send(notFound(`no page file ${path}`))
    reply.header('content-type', file.contentType).header('cache-control', 'no-cache')
    if (file.contentType.startsWith('text/html')) reply.header('content-security-policy', page.contentSecurityPolicy)
    return reply.send(file.body)
  })

  let address: string | undefined
  return {
    app,
    token,
    input,
    async listen() {
      address = await app.listen({ host, port: options.port ?? 4141 })
      return address.replace('://[::1]', '://localhost')
    },
    pageUrl() {
      if (address === undefined) throw new HarnessError('the server is not listening yet', 'INVALID_CONFIG')
      const base = address.replace('://[::1]', '://localhost')
      return token === undefined ? `${base}/` : `${base}/?token=${encodeURIComponent(token)}`
    },
    async drain(graceMs) {
      await sessions.drain?.(graceMs)
    },
    async close() {
      closing = true
      await app.close()
      await sessions.close?.()
    },
  }
}
