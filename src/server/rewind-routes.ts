// The page's "files changed" and "rewind to here": `GET /api/sessions/:id/file-changes` (per turn, which calls
// changed which paths), `GET …/file-changes/:turn` (that turn's diffs, from the checkpoint blobs) and
// `POST …/rewind` (the harness's rewind: files back, conversation continued in a fork).
import type { FastifyInstance } from 'fastify'
import { diffTurnFiles, fileChangesOf, DEFAULT_DIFF_MAX_BYTES } from '../app/turn-file-changes.js'
import { HarnessError } from '../errors/harness-error.js'
import type { RewindOptions, RewindResult } from '../harness/harness.js'
import type { SessionEvent } from '../session/events.js'
import type { CheckpointBlobStore, SessionStore } from '../store/types.js'
import { answers, SESSION_READ_ERRORS, SESSION_WRITE_ERRORS } from './api-schemas.js'
import { errorBody, notFound } from './http-errors.js'
import type { LocalSessionHost } from './local-session-host.js'
import { fileChangesSchema, rewindBodySchema, rewindResultSchema, turnFileDiffsSchema } from './rewind-schemas.js'
import type { SessionEventFeed, SessionInputPort } from './session-ports.js'

/** Rewinds sessions whose workspace is on this host. */
export interface SessionRewinder {
  /** `harness.rewind` of a session this server can rewind; the route has checked the options and the turn. */
  rewind(id: string, options: RewindOptions): Promise<RewindResult>
}

/** What the rewind routes work on. */
export interface RewindRouteContext {
  readonly input: SessionInputPort
  readonly feed: SessionEventFeed
  /** The store's checkpoint blobs (the diffs' content); undefined: diffs say the content is not known. */
  readonly blobs: CheckpointBlobStore | undefined
  /**
   * Restores files (and forks). Undefined when the server's sessions run elsewhere (a worker fleet): their
   * files are not on this host, so only a conversation-only rewind (`files: false`, a fork) is served.
   */
  readonly rewinder?: SessionRewinder
}

const idProperty = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$', description: 'session id' } as const
const idParams = { type: 'object', required: ['id'], properties: { id: idProperty } } as const
const MAX_DIFF_BYTES = 8 * 1024 * 1024

/**
 * The rewinder of the in-process session host: refuses a session that runs a turn here (409 `OPEN_TURN`) or
 * that another process holds open (409 `SESSION_LOCKED`, from the store's own lock), then runs the host's
 * harness's rewind, so a session this server runs is rewound through its live log.
 */
export function localRewinder(host: LocalSessionHost, store: SessionStore): SessionRewinder {
  return {
    async rewind(id, options) {
      const status = host.status(id)
      if (status === 'running' || status === 'awaiting-approval') throw runningError(id)
      if (status === 'stored') {
        // Nobody here runs it: make sure nobody elsewhere does either (a CLI chat's turn may be changing files).
        const probe = await store.open(id)
        await probe.writer.close()
      }
      return host.harness.rewind(id, options)
    },
  }
}

function runningError(id: string): HarnessError {
  return new HarnessError(`session '${id}' is running a turn: cancel it or wait for it to end before rewinding`, 'OPEN_TURN')
}

// Turn numbers that ended in the log, and those that started.
function turnsOf(events: readonly SessionEvent[]): { ended: Map<number, number>; started: Set<number>; lastEnded: number } {
  const ended = new Map<number, number>()
  const started = new Set<number>()
  let lastEnded = 0
  for (const event of events) {
    const turn = (event.data as { turn?: unknown } | null)?.turn
    if (typeof turn !== 'number') continue
    if (event.type === 'turn/start') started.add(turn)
    else if (event.type === 'turn/end') {
      ended.set(turn, event.seq)
      lastEnded = turn
    }
  }
  return { ended, started, lastEnded }
}

/** Registers the file-change and rewind routes (docs/serve.md, "Files and rewind"). */
export function registerRewindRoutes(app: FastifyInstance, ctx: RewindRouteContext): void {
  const { input, feed } = ctx

  app.get<{ Params: { id: string } }>(
    '/api/sessions/:id/file-changes',
    {
      schema: {
        summary: "Which workspace files each turn's tool calls changed (from the log's checkpoints), and the rewinds logged in the session",
        tags: ['views'],
        params: idParams,
        response: answers({ 200: fileChangesSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request) => fileChangesOf((await feed.read(request.params.id)).events),
  )

  app.get<{ Params: { id: string; turn: number }; Querystring: { maxBytes: number } }>(
    '/api/sessions/:id/file-changes/:turn',
    {
      schema: {
        summary: "One turn's file changes with a unified diff per text file (binary files and sides over maxBytes are marked, not diffed)",
        tags: ['views'],
        params: { type: 'object', required: ['id', 'turn'], properties: { id: idProperty, turn: { type: 'integer', minimum: 1, description: 'turn number' } } },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { maxBytes: { type: 'integer', minimum: 1, maximum: MAX_DIFF_BYTES, default: DEFAULT_DIFF_MAX_BYTES, description: 'largest side diffed, in bytes' } },
        },
        response: answers({ 200: turnFileDiffsSchema }, SESSION_READ_ERRORS),
      },
    },
    async (request, reply) => {
      const { id, turn } = request.params
      const { events } = await feed.read(id)
      if (!turnsOf(events).started.has(turn)) return reply.code(404).send(notFound(`session '${id}' has no turn ${turn}`))
      const changes = fileChangesOf(events).turns.find((t) => t.turn === turn) ?? { turn, files: [] }
      const files = await diffTurnFiles(changes, ctx.blobs, { maxBytes: request.query.maxBytes })
      return { turn, ...(changes.incomplete === true ? { incomplete: true } : {}), files }
    },
  )

  app.post<{ Params: { id: string }; Body: { toTurn: number; files?: boolean; conversation?: boolean; force?: boolean } }>(
    '/api/sessions/:id/rewind',
    {
      schema: {
        summary: 'Rewind to the end of turn toTurn (harness.rewind): workspace files back to their state then, the conversation continued in a fork there; 409 while the session runs a turn',
        tags: ['sessions'],
        params: idParams,
        body: rewindBodySchema,
        response: answers({ 200: rewindResultSchema }, SESSION_WRITE_ERRORS),
      },
    },
    async (request, reply) => {
      const { id } = request.params
      const { toTurn, files = true, conversation = true, force = false } = request.body
      if (!files && !conversation) return reply.code(400).send(errorBody('INVALID_REQUEST', 'a rewind needs files, conversation or both (both may not be false)'))
      const { events } = await feed.read(id)
      await input.refresh?.([id])
      const status = input.status(id)
      if (status === 'running' || status === 'awaiting-approval') throw runningError(id)
      const { ended, lastEnded } = turnsOf(events)
      if (toTurn === 0 && conversation) {
        return reply.code(400).send(errorBody('INVALID_BOUNDARY', 'rewinding the conversation to turn 0 leaves nothing to continue: rewind the files only (conversation: false), or start a new session'))
      }
      if (toTurn > 0 && !ended.has(toTurn)) {
        return reply.code(400).send(errorBody('INVALID_BOUNDARY', `session '${id}' has no ended turn ${toTurn}: ${lastEnded === 0 ? 'no turn has ended in it yet' : `its turns that ended run up to ${lastEnded}`}`))
      }
      let result: RewindResult
      if (ctx.rewinder !== undefined) result = await ctx.rewinder.rewind(id, { toTurn, files, conversation, force })
      else if (files) {
        return reply.code(400).send(
          errorBody(
            'UNSUPPORTED_OPTION',
            "this server cannot restore files: its sessions run on workers, whose workspaces are not on this host; rewind the conversation only (files: false), or run `ledgerloop rewind ID --to-turn N --store …` on the worker's host",
          ),
        )
      } else {
        // A fork at the end of the turn is all a conversation-only rewind is, and any store can do it.
        result = { sessionId: await input.fork(id, ended.get(toTurn) as number), restored: [], deleted: [], conflicts: [] }
      }
      return { from: id, sessionId: result.sessionId, forked: result.sessionId !== id, toTurn, restored: result.restored, deleted: result.deleted, conflicts: result.conflicts }
    },
  )
}
