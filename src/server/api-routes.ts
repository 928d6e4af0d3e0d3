import type { FastifyInstance } from 'fastify'
import { grepQuerySchema } from './content-search-schema.js'
import { checkSession } from '../views/session-check.js'
import { requestWithDiff } from '../views/request-view.js'
import { summarizeLog } from '../views/session-summary.js'
import { costFigure, type PricingCatalogue } from '../views/cost.js'
import { costCapOf } from '../views/cost-cap.js'
import { buildTimeline } from '../views/timeline.js'
import { buildConversation } from '../views/conversation.js'
import { requestFailureAt, withRequestFailures } from '../views/request-failure.js'
import { sessionActivity } from '../views/session-activity.js'
import { quarantineOf } from '../views/quarantine.js'
import { foldRequestHeader } from '../session/request-header.js'
import { compareSessions } from '../views/compare-sessions.js'
import { wordDiffParts } from '../views/word-diff.js'
import type { SessionSnapshot } from './session-ports.js'
import { previewApproval } from './approval-preview.js'
import { resumePoint, streamSessionEvents, type EventStreamOptions } from './event-stream.js'
import { notFound } from './http-errors.js'
import {
  acceptedSchema,
  duplicateSchema,
  resumedSchema,
  answeredSchema,
  answers,
  approvalsSchema,
  compactionSchema,
  createdSchema,
  eventPageSchema,
  READ_ERRORS,
  requestSchema,
  SESSION_READ_ERRORS,
  SESSION_WRITE_ERRORS,
  sessionPageSchema,
  sessionSchema,
  streamSchema,
  timelineSchema,
  conversationSchema,
  approvalPreviewSchema,
  comparisonSchema,
  rerunStartedSchema,
  verifySchema,
} from './api-schemas.js'
import { refuseBody } from './request-validation.js'
import type { SessionDirectory } from './session-directory.js'
import type { ApprovalVerdict, RerunRequest, SessionEventFeed, SessionInputPort, SessionRunStatus } from './session-ports.js'

/** What the API routes work on. */
export interface ApiContext {
  readonly input: SessionInputPort
  readonly feed: SessionEventFeed
  readonly directory: SessionDirectory
  readonly stream?: EventStreamOptions
  /** Prices for the `cost` figures (none: no cost in the answers). */
  readonly pricing?: PricingCatalogue
  /**
   * Where the file tools of the sessions this server runs are confined (its agents' `cwd`): approval previews
   * read the current file there. Unset when sessions run elsewhere (a worker fleet): a session's header `cwd`.
   */
  readonly toolRoot?: string
}

const STATUSES: readonly SessionRunStatus[] = ['running', 'awaiting-approval', 'idle', 'stored']
const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$', description: 'session id' } },
} as const
const keyHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      description: 'submission key: a retry with a key the session already holds is not queued again and answers 200',
    },
  },
} as const
const textBody = {
  type: 'object',
  required: ['text'],
  additionalProperties: false,
  properties: { text: { type: 'string', minLength: 1, maxLength: 1_000_000 } },
} as const

/** Registers every `/api/` route (the route table of docs/serve.md, "The API"). */
export function registerApiRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { input, feed, directory } = ctx

  app.get<{ Querystring: { status?: SessionRunStatus; q?: string; grep?: string; limit: number; offset: number } }>(
    '/api/sessions',
    {
      schema: {
        summary: 'List sessions, newest first',
        tags: ['sessions'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: [...STATUSES] },
            q: { type: 'string', maxLength: 200, description: 'part of the title or first prompt (case-insensitive), or a prefix of the id' },
            grep: grepQuerySchema,
            limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
            offset: { type: 'integer', minimum: 0, default: 0 },
          },
        },
        response: answers({ 200: sessionPageSchema }, READ_ERRORS),
      },
    },
    async (request) => {
      const { status, q, grep, limit, offset } = request.query
      await input.refresh?.()
      const page = await directory.list({ ...(status !== undefined ? { status } : {}), ...(q !== undefined ? { q } : {}), ...(grep !== undefined ? { grep } : {}), limit, offset })
      return { sessions: page.sessions, total: page.total, ...(offset + limit < page.total ? { next: offset + limit } : {}) }
    },
  )

  app.post<{ Body: { provider?: string; model?: string; system?: string; maxCostUsd?: number } }>(
    '/api/sessions',
    {
      schema: {
        summary: 'Create a session (unset fields take the server defaults)',
        tags: ['sessions'],
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            provider: { type: 'string', minLength: 1, maxLength: 100 },
            model: { type: 'string', minLength: 1, maxLength: 200 },
            system: { type: 'string', maxLength: 200_000 },
            maxCostUsd: { type: 'number', exclusiveMinimum: 0, description: "this session's cost cap in US dollars (replaces the server's --max-cost; recorded in its log)" },
          },
        },
        // It creates the session and has no path parameter: no 404, 409 or 414.
        response: answers({ 201: createdSchema }, SESSION_WRITE_ERRORS.filter((s) => s !== 404 && s !== 409 && s !== 414)),
      },
    },
    async (request, reply) => {
      const id = await input.create(request.body ?? {})
      return reply.code(201).send({ id })
    },
  )

  app.get<{ Params: { id: string } }>('/api/sessions/:id', { schema: { summary: 'A session: header, status, summary and model', tags: ['sessions'], params: idParams, response: answers({ 200: sessionSchema }, SESSION_READ_ERRORS) } }, async (request) => {
    const { id } = request.params
    const { header, events } = await feed.read(id)
    await input.refresh?.([id])
    const config = foldRequestHeader(events)?.config
    const cost = costFigure(events, ctx.pricing)
    const costCap = costCapOf(events, ctx.pricing ?? {})
    const status = input.status(id)
    const activity = sessionActivity(events, status)
    const quarantine = quarantineOf(events)
    const owner = input.owner?.(id)
    return {
      id,
      header,
      status,
      ...(quarantine !== undefined ? { quarantine } : {}),
      ...(owner !== undefined ? { owner } : {}),
      // What it is doing or waiting for now, or why its last turn was cut off (absent at rest).
      ...(activity !== undefined ? { activity } : {}),
      events: events.length,
      // title, turns, lastReason and usage: the summary's usage is the figure sessionUsage would sum again.
      ...summarizeLog(events),
      ...(cost !== undefined ? { cost } : {}),
      ...(costCap !== undefined ? { costCap } : {}),
      ...(config !== undefined ? { provider: config.provider, model: config.model } : {}),
    }
  })

  app.get<{ Params: { id: string }; Querystring: { after: number; limit: number } }>(
    '/api/sessions/:id/events',
    {
      schema: {
        summary: 'Events with seq > after, oldest first',
        tags: ['events'],
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { after: { type: 'integer', minimum: -1, default: -1 }, limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 1000 } },
        },
        response: answers({ 200: eventPageSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request) => {
      const { after, limit } = request.query
      const { events } = await feed.read(request.params.id)
      const page = events.slice(after + 1, after + 1 + limit)
      const last = page[page.length - 1]
      return { events: page, ...(last !== undefined && last.seq < events.length - 1 ? { next: last.seq } : {}) }
    },
  )

  app.get<{ Params: { id: string }; Querystring: { after?: number } }>(
    '/api/sessions/:id/stream',
    {
      schema: {
        summary: 'Live tail as Server-Sent Events (id = seq; resumes after Last-Event-ID, else after ?after=)',
        tags: ['events'],
        params: idParams,
        querystring: { type: 'object', additionalProperties: false, properties: { after: { type: 'integer', minimum: -1 } } },
        response: answers({ 200: streamSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request, reply) => {
      const from = resumePoint(request.headers['last-event-id'], request.query.after)
      await streamSessionEvents(feed, request.params.id, from, reply.raw, { ...ctx.stream, onReady: () => reply.hijack() })
    },
  )

  for (const kind of ['followup', 'steer'] as const) {
    app.post<{ Params: { id: string }; Body: { text: string }; Headers: { 'idempotency-key'?: string } }>(
      `/api/sessions/:id/${kind}`,
      {
        schema: {
          summary: `Queue input (${kind}); with an Idempotency-Key the session already holds, nothing is queued again (200)`,
          tags: ['input'],
          params: idParams,
          headers: keyHeaders,
          body: textBody,
          response: answers({ 200: duplicateSchema, 202: acceptedSchema }, SESSION_WRITE_ERRORS),
        },
      },
      async (request, reply) => {
        const key = request.headers['idempotency-key']
        const first = await input[kind](request.params.id, request.body.text, key !== undefined ? { key } : {})
        if (first === undefined) return reply.code(202).send({ accepted: true })
        return reply.code(200).send({ accepted: false, duplicate: true, ...first })
      },
    )
  }

  app.post<{ Params: { id: string }; Body: { text: string } }>(
    '/api/sessions/:id/inject',
    { schema: { summary: 'Queue input (inject: for the next step, without waking the session)', tags: ['input'], params: idParams, body: textBody, response: answers({ 202: acceptedSchema }, SESSION_WRITE_ERRORS) } },
    async (request, reply) => {
      // Injected context is not a submission a client retries: a key would be silently meaningless, so say so.
      if (request.headers['idempotency-key'] !== undefined) {
        return reply.code(400).send({ error: { code: 'INVALID_REQUEST', message: 'inject takes no Idempotency-Key header (followup and steer do)' } })
      }
      await input.inject(request.params.id, request.body.text)
      return reply.code(202).send({ accepted: true })
    },
  )

  app.post<{ Params: { id: string } }>(
    '/api/sessions/:id/compact',
    // No body: an unknown field must not pass for an option (`{"keep":…}` once ran a compaction it did not shape).
    {
      schema: {
        summary: 'Compact the older history of an idle session now (logged like an automatic compaction); takes no body',
        tags: ['input'],
        params: idParams,
        response: answers({ 200: compactionSchema }, [...SESSION_WRITE_ERRORS, 501]),
      },
      preValidation: refuseBody,
    },
    async (request, reply) => {
      if (input.compact === undefined) {
        return reply.code(501).send({ error: { code: 'NOT_IMPLEMENTED', message: 'compaction by hand is not available on this server: its sessions run on workers, and compacting by hand needs the running agent' } })
      }
      return input.compact(request.params.id)
    },
  )

  app.post<{ Params: { id: string }; Body: { force?: boolean } | undefined }>(
    '/api/sessions/:id/resume',
    {
      schema: {
        summary: 'Resume a session now; force: true lifts a quarantine ("resume anyway")',
        tags: ['input'],
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: { force: { type: 'boolean', description: 'lift a quarantine (otherwise 409 SESSION_QUARANTINED)' } } },
        response: answers({ 200: resumedSchema }, [...SESSION_WRITE_ERRORS, 501]),
      },
    },
    async (request, reply) => {
      if (input.resume === undefined) return reply.code(501).send({ error: { code: 'NOT_IMPLEMENTED', message: 'this server cannot resume sessions' } })
      return input.resume(request.params.id, { force: request.body?.force === true })
    },
  )

  app.post<{ Params: { id: string } }>('/api/sessions/:id/cancel', { schema: { summary: 'Cancel the running turn; takes no body', tags: ['input'], params: idParams, response: answers({ 202: acceptedSchema }, SESSION_WRITE_ERRORS) }, preValidation: refuseBody }, async (request, reply) => {
    await input.cancel(request.params.id)
    return reply.code(202).send({ accepted: true })
  })

  app.get<{ Params: { id: string } }>('/api/sessions/:id/approvals', { schema: { summary: 'Tool calls waiting for a decision', tags: ['input'], params: idParams, response: answers({ 200: approvalsSchema }, SESSION_READ_ERRORS) } }, async (request) => ({
    approvals: await input.approvals(request.params.id),
  }))

  app.post<{ Params: { id: string; callId: string }; Body: { decision: ApprovalVerdict } }>(
    '/api/sessions/:id/approvals/:callId',
    {
      schema: {
        summary: 'Answer a pending tool call (always = allow this tool for the rest of the session)',
        tags: ['input'],
        params: { type: 'object', required: ['id', 'callId'], properties: { ...idParams.properties, callId: { type: 'string', minLength: 1, maxLength: 200 } } },
        body: { type: 'object', required: ['decision'], additionalProperties: false, properties: { decision: { type: 'string', enum: ['allow', 'deny', 'always'] } } },
        response: answers({ 200: answeredSchema }, SESSION_WRITE_ERRORS),
      },
    },
    async (request, reply) => {
      const { id, callId } = request.params
      if (!(await input.answer(id, callId, request.body.decision))) return reply.code(404).send(notFound(`no tool call '${callId}' is waiting for a decision in session '${id}'`))
      return { answered: callId, decision: request.body.decision }
    },
  )

  app.get<{ Params: { id: string; callId: string } }>(
    '/api/sessions/:id/approvals/:callId/preview',
    {
      schema: {
        summary: "What a pending tool call would do: a bash command, a write_file / edit_file diff against the file as it is now (read under the session's working folder), else its arguments",
        tags: ['input'],
        params: { type: 'object', required: ['id', 'callId'], properties: { ...idParams.properties, callId: { type: 'string', minLength: 1, maxLength: 200 } } },
        response: answers({ 200: approvalPreviewSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request, reply) => {
      const { id, callId } = request.params
      const pending = (await input.approvals(id)).find((a) => a.callId === callId)
      if (pending === undefined) return reply.code(404).send(notFound(`no tool call '${callId}' is waiting for a decision in session '${id}'`))
      const { header } = await feed.read(id)
      // A stored session started elsewhere keeps its own header cwd, but this server's tools run on its own root.
      return previewApproval(pending, ctx.toolRoot ?? header.cwd)
    },
  )

  app.get<{ Params: { id: string; n: number } }>(
    '/api/sessions/:id/requests/:n',
    {
      schema: {
        summary: 'The n-th model request (1-based) rebuilt from the log, with its diff from request n-1',
        tags: ['views'],
        params: { type: 'object', required: ['id', 'n'], properties: { ...idParams.properties, n: { type: 'integer', minimum: 1 } } },
        response: answers({ 200: requestSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request, reply) => {
      const { id, n } = request.params
      const { events } = await feed.read(id)
      const rebuilt = requestWithDiff(events, n)
      if (rebuilt === undefined) return reply.code(404).send(notFound(`session '${id}' has no request ${n}`))
      const failure = requestFailureAt(events, rebuilt.request.lastSeq)
      return { ...rebuilt.request, count: rebuilt.count, diff: rebuilt.diff ?? null, ...(failure !== undefined ? { failure } : {}) }
    },
  )

  app.get<{ Params: { id: string } }>('/api/sessions/:id/timeline', { schema: { summary: 'The session as waterfall rows (turns, steps, requests, tool calls)', tags: ['views'], params: idParams, response: answers({ 200: timelineSchema }, SESSION_READ_ERRORS) } }, async (request) => {
    const { header, events } = await feed.read(request.params.id)
    return withRequestFailures(buildTimeline(header, events), events)
  })

  app.get<{ Params: { id: string } }>(
    '/api/sessions/:id/conversation',
    { schema: { summary: 'The session as a conversation: per turn its prompts, answers, tool calls with decisions and results, retries and end', tags: ['views'], params: idParams, response: answers({ 200: conversationSchema }, SESSION_READ_ERRORS) } },
    async (request) => {
      const { events } = await feed.read(request.params.id)
      return buildConversation(events)
    },
  )

  app.get<{ Params: { id: string } }>('/api/sessions/:id/verify', { schema: { summary: 'Check the log grammar and rebuild every request', tags: ['views'], params: idParams, response: answers({ 200: verifySchema }, SESSION_READ_ERRORS) } }, async (request) => {
    const { id } = request.params
    const busy = (): boolean => input.status(id) === 'running' || input.status(id) === 'awaiting-approval'
    // A session running right now legitimately ends inside a turn. A port that learns statuses from elsewhere
    // is asked before and after the read, so a turn starting or ending meanwhile is not taken for a broken log.
    await input.refresh?.([id])
    const before = busy()
    const { events } = await feed.read(id)
    if (input.refresh !== undefined) await input.refresh([id])
    const running = before || busy()
    return checkSession(events, { allowOpenTurn: running })
  })

  app.post<{ Params: { id: string }; Body: { at?: number } | undefined }>(
    '/api/sessions/:id/fork',
    {
      schema: {
        summary: 'Fork a session after seq `at` (default: its end)',
        tags: ['sessions'],
        params: idParams,
        body: { type: 'object', additionalProperties: false, properties: { at: { type: 'integer', minimum: 0 } } },
        response: answers({ 201: createdSchema }, SESSION_WRITE_ERRORS),
      },
    },
    async (request, reply) => {
      const id = await input.fork(request.params.id, request.body?.at)
      return reply.code(201).send({ id })
    },
  )

  app.post<{ Params: { id: string }; Body: RerunRequest | undefined }>(
    '/api/sessions/:id/rerun',
    {
      schema: {
        summary: "Rerun a session (ledgerloop rerun): fork it before turn fromTurn and feed the recorded user inputs to the agent as configured now, with these overrides; answers the new session's id while its turns run",
        tags: ['sessions'],
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            provider: { type: 'string', minLength: 1, maxLength: 100 },
            model: { type: 'string', minLength: 1, maxLength: 200 },
            system: { type: 'string', maxLength: 200_000, description: "persona of the rerun's system prompt (replaces the server's)" },
            tools: { type: 'string', enum: ['recorded', 'live'], default: 'recorded', description: 'recorded: tools answer from the recording; live: the server’s tools run' },
            fromTurn: { type: 'integer', minimum: 1, description: 'first turn to rerun (default 1)' },
          },
        },
        response: answers({ 202: rerunStartedSchema }, [...SESSION_WRITE_ERRORS, 501]),
      },
    },
    async (request, reply) => {
      if (input.rerun === undefined) {
        return reply.code(501).send({ error: { code: 'NOT_IMPLEMENTED', message: "reruns are not available on this server: its sessions run on workers, and a rerun needs a composition (adapters and tools) to run the agent; run `ledgerloop rerun ID --store …` where the workers' configuration is" } })
      }
      const id = await input.rerun(request.params.id, request.body ?? {})
      return reply.code(202).send({ id })
    },
  )

  app.get<{ Querystring: { a: string; b: string; ignoreText: boolean } }>(
    '/api/compare',
    {
      schema: {
        summary: 'Two sessions compared turn by turn (ledgerloop diff): final texts as a word diff, tool calls, end reasons, steps, tokens, cost',
        tags: ['views'],
        querystring: {
          type: 'object',
          required: ['a', 'b'],
          additionalProperties: false,
          properties: {
            a: { ...idParams.properties.id, description: 'session A' },
            b: { ...idParams.properties.id, description: 'session B' },
            ignoreText: { type: 'boolean', default: false, description: 'texts are shown but do not make a turn differ' },
          },
        },
        response: answers({ 200: comparisonSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request) => {
      const { a, b, ignoreText } = request.query
      const [left, right] = await Promise.all([feed.read(a), feed.read(b)])
      const comparison = compareSessions(left.events, right.events, { ignoreText, ...(ctx.pricing !== undefined ? { pricing: ctx.pricing } : {}) })
      return {
        a: comparedSession(a, left),
        b: comparedSession(b, right),
        same: comparison.same,
        ignoreText: comparison.ignoreText,
        // The page marks the changed words from these runs rather than parsing the notation back.
        turns: comparison.turns.map((t) => (t.a !== undefined && t.b !== undefined && t.textDiff !== undefined ? { ...t, textParts: wordDiffParts(t.a.text, t.b.text) } : t)),
      }
    },
  )
}

/** What the compare view names a session by. */
function comparedSession(id: string, { header, events }: SessionSnapshot): { id: string; title: string; turns: number; forkedFrom?: string; provider?: string; model?: string } {
  const { title, turns } = summarizeLog(events)
  const config = foldRequestHeader(events)?.config
  return { id, title, turns, ...(header.forkedFrom !== undefined ? { forkedFrom: header.forkedFrom } : {}), ...(config !== undefined ? { provider: config.provider, model: config.model } : {}) }
}
