import { contentMatchSchema } from './content-search-schema.js'
// Response schemas of the `serve` API, for the OpenAPI document. Answers are serialised with plain JSON.stringify
// (see createLedgerServer), so these schemas describe what is sent and never reshape it: the OpenAPI test checks
// real answers against them, and a field added to an answer must be added here too.

/** Statuses an `/api/` answer may carry besides its success, each with the `{error: {code, message}}` body. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 414 | 415 | 500 | 501 | 503

const ERROR_MEANING: Readonly<Record<ErrorStatus, string>> = {
  400: 'the request is malformed: a parameter, query or body breaks its schema (INVALID_REQUEST), bad JSON (INVALID_JSON), a URL that cannot be decoded (INVALID_URL), or a value the harness refuses (NO_ADAPTER, INVALID_CONFIG, …)',
  401: 'no token, or a wrong one (UNAUTHORIZED)',
  403: 'a foreign Origin (FORBIDDEN_ORIGIN) or Host (FORBIDDEN_HOST)',
  404: 'no such session (SESSION_NOT_FOUND), or nothing by that name in it (NOT_FOUND)',
  409: 'the session is busy or held elsewhere (AGENT_BUSY, SESSION_LOCKED, LEASE_LOST, OPEN_TURN)',
  413: 'the body is larger than the server accepts (BODY_TOO_LARGE)',
  414: 'a path parameter is longer than the router takes (URI_TOO_LONG)',
  415: 'the body is not JSON (UNSUPPORTED_MEDIA_TYPE)',
  500: 'the server failed (INTERNAL); its log has the details',
  501: 'this server cannot do that (NOT_IMPLEMENTED)',
  503: 'the store cannot answer right now, or the server is shutting down (STORE_UNAVAILABLE, SERVER_CLOSING, …); the same request may work later',
}

/** The body of every error answer. */
export const errorSchema = {
  type: 'object',
  required: ['error'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', description: 'stable, machine-readable (e.g. SESSION_NOT_FOUND)' },
        message: { type: 'string', description: 'for people' },
      },
    },
  },
} as const

/** Statuses every `/api/` route may answer with. */
const ALWAYS: readonly ErrorStatus[] = [401, 403, 500, 503]
/** Routes with path parameters or a query (validated). */
export const READ_ERRORS: readonly ErrorStatus[] = [400, ...ALWAYS]
/** Routes on one session (an id in the path). */
export const SESSION_READ_ERRORS: readonly ErrorStatus[] = [400, 404, ...ALWAYS]
/**
 * Routes that change a session (they take a JSON body, or none). An id past the router's parameter limit is a 414
 * here; on the GET routes such a path falls through to the page's catch-all and is a 404.
 */
export const SESSION_WRITE_ERRORS: readonly ErrorStatus[] = [400, 404, 409, 413, 414, 415, ...ALWAYS]

/**
 * A route's `response` table: its success schemas (each with a `description`) and the error body under each of
 * `errors`.
 */
export function answers(success: Readonly<Record<number, object>>, errors: readonly ErrorStatus[]): Record<number, object> {
  const table: Record<number, object> = { ...success }
  for (const status of [...errors].sort((a, b) => a - b)) table[status] = { description: ERROR_MEANING[status], ...errorSchema }
  return table
}

const integer = { type: 'integer' } as const
const seq = { type: 'integer', minimum: 0 } as const
const string = { type: 'string' } as const

/** A provider failure as the log keeps it (`LlmFailure`). */
const failureSchema = {
  type: 'object',
  description: 'why a request failed: its code, message and, when a server answered, the HTTP status',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, status: { type: 'integer' } },
} as const

const usageSchema = {
  type: 'object',
  description: 'token totals (input includes cache reads)',
  required: ['input', 'output', 'cacheRead'],
  properties: { input: integer, output: integer, cacheRead: integer },
} as const

const costSchema = {
  type: 'object',
  description: "what the logged usage cost at the server's prices",
  required: ['total', 'currency'],
  properties: { total: { type: 'number' }, currency: string, asOf: string },
} as const

const costCapSchema = {
  type: 'object',
  description: "the session's cost cap (recorded in its log) and what was billed against it, every request attempt included",
  required: ['maxUsd', 'per', 'origin', 'spentUsd', 'unpriced', 'unpricedModels', 'stoppedTurns', 'summary'],
  additionalProperties: false,
  properties: {
    maxUsd: { type: 'number', description: 'the cap in US dollars' },
    per: { type: 'string', enum: ['session', 'turn'] },
    origin: { type: 'string', enum: ['session', 'plugin'], description: "`session`: chosen when the session was created; `plugin`: the server's or CLI's --max-cost" },
    spentUsd: { type: 'number', description: 'USD billed (the whole session, or its last turn with per `turn`)' },
    unpriced: { type: 'integer', description: 'responses without a USD price: not counted against the cap' },
    unpricedModels: { type: 'array', items: string, description: 'provider/model of each model the budget warned it cannot price' },
    stoppedTurns: { type: 'array', items: integer, description: 'turns the cap stopped' },
    summary: { type: 'string', description: 'e.g. "spent $0.0140 of $0.0200 cap"' },
  },
} as const

const statusSchema = { type: 'string', enum: ['running', 'awaiting-approval', 'idle', 'stored'] } as const
const lastReasonSchema = { type: ['string', 'null'], description: 'how the last turn ended (completed, aborted, error, …), null before any' } as const

/** A logged session event (also each `data:` of the stream). */
export const eventSchema = {
  type: 'object',
  required: ['type', 'seq', 'time', 'data'],
  properties: {
    type: { type: 'string', description: 'e.g. user/message, turn/end' },
    seq: { ...seq, description: "the event's index in the log" },
    time: { type: 'number', description: 'ms since epoch' },
    data: { description: "the type's data (any JSON)" },
    surfaceOp: {
      description: 'on surface events: append, or replace the surface range [start, end)',
      oneOf: [
        { type: 'string', const: 'append' },
        { type: 'object', required: ['op', 'start', 'end'], properties: { op: { type: 'string', const: 'replace' }, start: seq, end: seq } },
      ],
    },
    sourceEventSeqs: { type: 'array', items: seq },
    ignorable: { type: 'boolean', const: true },
  },
} as const

const headerSchema = {
  type: 'object',
  description: "the session file's header",
  required: ['version', 'id', 'createdAt'],
  properties: {
    version: integer,
    id: string,
    createdAt: { type: 'number', description: 'ms since epoch' },
    cwd: string,
    parentSession: string,
    forkedFrom: { type: 'string', description: 'on a rerun: the recorded session it reran' },
    seedLength: integer,
    parentCallId: string,
    agentProfile: string,
    delegationDepth: integer,
  },
} as const

const idAnswer = { type: 'object', required: ['id'], additionalProperties: false, properties: { id: string } } as const

/** `201` of create and fork. */
export const createdSchema = { description: 'created: the new session id', ...idAnswer } as const

/** `202` of the input routes and cancel. */
export const acceptedSchema = {
  description: 'queued',
  type: 'object',
  required: ['accepted'],
  additionalProperties: false,
  properties: { accepted: { type: 'boolean', const: true } },
} as const

/** `200` of an input route: an `Idempotency-Key` the session already holds; nothing was queued again. */
export const duplicateSchema = {
  description: 'not queued again: input with this Idempotency-Key was sent before; where that input stands',
  type: 'object',
  required: ['accepted', 'duplicate', 'messageId', 'state'],
  additionalProperties: false,
  properties: {
    accepted: { type: 'boolean', const: false },
    duplicate: { type: 'boolean', const: true },
    messageId: { type: 'string', description: 'id of the user message first sent with the key' },
    state: {
      type: 'string',
      enum: ['queued', 'claimed', 'discarded'],
      description: 'queued: waiting for a turn (no turn number yet); claimed: turn `turn` took it; discarded: a cancel cleared it before any turn took it',
    },
    turn: { ...integer, description: 'the turn that took the input (when claimed)' },
    continuedIn: { ...integer, description: 'the continuation turn carrying on `turn` after a crash interrupted it' },
  },
} as const

/** A quarantine in force (`session/quarantined` not lifted since): no worker claims the session. */
const quarantineSchema = {
  type: 'object',
  description: 'the session is quarantined: the same work crashed its process too often; resume it with force to try again',
  required: ['reason', 'seq', 'since'],
  additionalProperties: false,
  properties: {
    reason: { type: 'string' },
    seq: { type: 'integer', description: 'seq of the session/quarantined event' },
    since: { type: 'number', description: 'log time (ms) it was quarantined' },
  },
} as const
const ownerSchema = { type: 'string', description: 'with a worker fleet: the worker holding the lease (its ownerId, host:pid:…)' } as const

/** `200` of `POST /api/sessions/{id}/resume`. */
export const resumedSchema = {
  description: 'resumed (its interrupted work goes on); `lifted` when a quarantine was lifted',
  type: 'object',
  required: ['lifted'],
  additionalProperties: false,
  properties: { lifted: { type: 'boolean' } },
} as const

/** `200` of `GET /api/sessions`. */
export const sessionPageSchema = {
  description: 'one page of sessions, newest first',
  type: 'object',
  required: ['sessions', 'total'],
  additionalProperties: false,
  properties: {
    sessions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'title', 'updatedAt', 'turns', 'lastReason', 'status'],
        additionalProperties: false,
        properties: {
          id: string,
          title: { type: 'string', description: "the first prompt, clipped ('' before any)" },
          updatedAt: { type: 'string', format: 'date-time' },
          turns: integer,
          lastReason: lastReasonSchema,
          status: statusSchema,
          usage: usageSchema,
          parentSession: string,
          problem: { type: 'string', description: 'why the session could not be read' },
          cost: costSchema,
          quarantine: quarantineSchema,
          owner: ownerSchema,
          match: contentMatchSchema,
        },
      },
    },
    total: { type: 'integer', description: 'sessions matching the query' },
    next: { type: 'integer', description: 'the offset of the next page, when there is one' },
  },
} as const

/** `200` of `GET /api/sessions/{id}`. */
export const sessionSchema = {
  description: 'the session',
  type: 'object',
  required: ['id', 'header', 'status', 'events', 'title', 'turns', 'lastReason', 'usage'],
  additionalProperties: false,
  properties: {
    id: string,
    header: headerSchema,
    status: statusSchema,
    events: { type: 'integer', description: 'events logged' },
    title: string,
    turns: integer,
    lastReason: lastReasonSchema,
    usage: usageSchema,
    cost: costSchema,
    costCap: costCapSchema,
    provider: { type: 'string', description: 'of the last request' },
    model: { type: 'string', description: 'of the last request' },
    quarantine: quarantineSchema,
    owner: ownerSchema,
    activity: {
      type: 'object',
      description: 'what the session is doing or waiting for, or why its last turn stopped (absent at rest)',
      required: ['kind', 'summary', 'turn', 'since'],
      additionalProperties: false,
      properties: {
        kind: { type: 'string', enum: ['model', 'tool', 'retry', 'approval', 'interrupted', 'orphaned'] },
        summary: string,
        turn: integer,
        since: { type: 'number', description: 'log time (ms) the wait started' },
      },
    },
  },
} as const

/** `200` of `GET /api/sessions/{id}/events`. */
export const eventPageSchema = {
  description: 'events after `after`, oldest first',
  type: 'object',
  required: ['events'],
  additionalProperties: false,
  properties: {
    events: { type: 'array', items: eventSchema },
    next: { type: 'integer', description: 'pass as `after` for the next page, when there is one' },
  },
} as const

/** `200` of `GET /api/sessions/{id}/stream`. */
export const streamSchema = {
  description:
    'Server-Sent Events: each logged event as `id: <seq>`, `event: <type>`, `data: <the event as JSON>`; `event: approvals` with `{approvals: [...]}` when the pending approvals change; `event: error` with `{message}` when the feed fails; comments as heartbeats',
  content: { 'text/event-stream': { schema: { type: 'string' } } },
} as const

/** `200` of `POST /api/sessions/{id}/compact`. */
export const compactionSchema = {
  description: 'what the compaction did (the facts of its compaction/end event)',
  type: 'object',
  required: ['turn', 'outcome', 'tokensBefore', 'tokensAfter', 'shrank'],
  additionalProperties: false,
  properties: {
    turn: { type: ['integer', 'null'] },
    outcome: { type: 'string', enum: ['summarized', 'pruned', 'nothing', 'not-smaller', 'failed'] },
    tokensBefore: integer,
    tokensAfter: integer,
    summarySeq: seq,
    error: { type: 'object', required: ['code', 'message'], properties: { code: string, message: string } },
    shrank: { type: 'boolean', description: 'the next request is smaller than before' },
  },
} as const

/** `200` of `GET /api/sessions/{id}/approvals`. */
export const approvalsSchema = {
  description: 'tool calls waiting for a decision',
  type: 'object',
  required: ['approvals'],
  additionalProperties: false,
  properties: {
    approvals: {
      type: 'array',
      items: {
        type: 'object',
        required: ['callId', 'tool', 'args', 'subject', 'reason', 'askedAt'],
        additionalProperties: false,
        properties: {
          callId: string,
          tool: string,
          args: { description: "the call's parsed arguments" },
          subject: { type: 'string', description: 'its command, path or pattern' },
          reason: { type: 'string', description: 'why it needs approval' },
          askedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
} as const

/** `200` of `POST /api/sessions/{id}/approvals/{callId}`. */
export const answeredSchema = {
  description: 'the decision was taken',
  type: 'object',
  required: ['answered', 'decision'],
  additionalProperties: false,
  properties: { answered: { type: 'string', description: 'the call id' }, decision: { type: 'string', enum: ['allow', 'deny', 'always'] } },
} as const

const messageSchema = {
  type: 'object',
  required: ['id', 'role', 'content', 'source'],
  properties: { id: string, role: { type: 'string', enum: ['user', 'assistant'] }, content: { type: 'array', items: { type: 'object', required: ['type'] } }, source: { type: 'object', required: ['kind'] } },
} as const

const configSchema = {
  type: 'object',
  required: ['provider', 'model'],
  properties: { provider: string, model: string, reasoningEffort: string, temperature: { type: 'number' }, maxTokens: integer, stop: { type: 'array', items: string } },
} as const

const toolSchema = { type: 'object', required: ['name', 'description', 'parameters'], properties: { name: string, description: string, parameters: {} } } as const
const names = { type: 'array', items: string } as const

/** `200` of `GET /api/sessions/{id}/requests/{n}`. */
export const requestSchema = {
  description: 'the request as it was sent, rebuilt from the log, and what changed from request n-1 (null for the first)',
  type: 'object',
  required: ['n', 'turn', 'step', 'firstSeq', 'lastSeq', 'tools', 'messages', 'count', 'diff'],
  additionalProperties: false,
  properties: {
    n: integer,
    turn: integer,
    step: integer,
    firstSeq: seq,
    lastSeq: seq,
    finish: { type: 'string', description: 'how its stream finished (stop, tool-calls, …), when it did' },
    config: configSchema,
    system: string,
    tools: { type: 'array', items: toolSchema },
    messages: { type: 'array', items: messageSchema },
    count: { type: 'integer', description: 'requests in the session' },
    failure: failureSchema,
    diff: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['from', 'to', 'config', 'systemChanged', 'tools', 'commonMessages', 'removedMessages', 'addedMessages', 'stablePrefix'],
          additionalProperties: false,
          properties: {
            from: integer,
            to: integer,
            config: { type: 'array', items: { type: 'object', required: ['key'], properties: { key: string, before: {}, after: {} } } },
            systemChanged: { type: 'boolean' },
            tools: { type: 'object', required: ['added', 'removed', 'changed'], properties: { added: names, removed: names, changed: names } },
            commonMessages: integer,
            removedMessages: integer,
            addedMessages: { type: 'array', items: messageSchema },
            stablePrefix: {
              type: 'object',
              description: 'what a prompt cache can reuse',
              required: ['tools', 'system', 'messages'],
              properties: { tools: { type: 'boolean' }, system: { type: 'boolean' }, messages: integer },
            },
          },
        },
      ],
    },
  },
} as const

/** `200` of `GET /api/sessions/{id}/conversation`. */
export const conversationSchema = {
  description: 'the session as a conversation, turn by turn',
  type: 'object',
  required: ['events', 'turns'],
  additionalProperties: false,
  properties: {
    events: { type: 'integer', description: 'events the fold read' },
    turns: {
      type: 'array',
      items: {
        type: 'object',
        required: ['turn', 'startSeq', 'status', 'detail', 'items'],
        additionalProperties: false,
        properties: {
          turn: integer,
          startSeq: seq,
          endSeq: seq,
          status: { type: 'string', enum: ['completed', 'max-tokens', 'blocked', 'aborted', 'error', 'interrupted', 'open'] },
          detail: string,
          continues: { type: 'integer', description: 'a continuation turn: the interrupted turn it carries on' },
          error: { type: 'object', required: ['code', 'message'], properties: { code: string, message: string, status: integer, hint: string } },
          items: {
            type: 'array',
            items: {
              type: 'object',
              required: ['kind', 'seq'],
              description: 'a prompt, an answer (text, reasoning), a tool call (arguments, decision, result) or a retry',
              properties: { kind: { type: 'string', enum: ['prompt', 'answer', 'tool', 'retry'] }, seq },
            },
          },
        },
      },
    },
  },
} as const

/** `200` of `GET /api/sessions/{id}/approvals/{callId}/preview`. */
export const approvalPreviewSchema = {
  description: 'what the pending call would do: a bash command, a file change with its diff, or its arguments',
  type: 'object',
  required: ['callId', 'tool', 'kind'],
  properties: {
    callId: string,
    tool: string,
    kind: { type: 'string', enum: ['command', 'file', 'arguments'] },
    command: string,
    network: { type: 'boolean' },
    change: { type: 'object' },
    args: {},
  },
} as const

/** `200` of `GET /api/sessions/{id}/timeline`. */
export const timelineSchema = {
  description: 'the session as waterfall rows on one time axis',
  type: 'object',
  required: ['id', 'createdAt', 'events', 'start', 'end', 'usage', 'turns', 'requests', 'rows'],
  additionalProperties: false,
  properties: {
    id: string,
    createdAt: { type: 'string', format: 'date-time' },
    parentSession: string,
    events: integer,
    start: { type: 'number', description: 'ms since epoch' },
    end: { type: 'number', description: 'ms since epoch' },
    usage: usageSchema,
    turns: integer,
    requests: integer,
    rows: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kind', 'depth', 'label', 'start', 'status', 'detail', 'turn', 'firstSeq'],
        properties: {
          kind: { type: 'string', enum: ['turn', 'step', 'request', 'tool'] },
          depth: { type: 'integer', minimum: 0, maximum: 2 },
          label: string,
          start: { type: 'number' },
          end: { type: 'number', description: 'absent while the row is open' },
          status: string,
          detail: string,
          turn: integer,
          step: integer,
          firstSeq: seq,
          lastSeq: seq,
          request: { type: 'integer', description: 'on request rows: n for requests/{n}' },
          callId: string,
          usage: usageSchema,
          failure: failureSchema,
          continues: { type: 'integer', description: 'on a continuation turn: the turn a crash interrupted, whose work it carries on' },
        },
      },
    },
  },
} as const

/** `200` of `GET /api/sessions/{id}/verify`. */
export const verifySchema = {
  description: 'the check of the log grammar and of every rebuilt request',
  type: 'object',
  required: ['ok', 'problems', 'events', 'requests'],
  additionalProperties: false,
  properties: { ok: { type: 'boolean' }, problems: { type: 'array', items: { type: 'string' }, description: 'each naming the seq it concerns' }, events: integer, requests: integer },
} as const

/** `200` of `GET /api/openapi.json`. */
export const openapiSchema = {
  description: 'this document (OpenAPI 3.1)',
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: { openapi: { type: 'string', pattern: '^3\\.1\\.' }, info: { type: 'object', required: ['title', 'version'] }, paths: { type: 'object' }, components: { type: 'object' } },
} as const

/** `202` of `POST /api/sessions/{id}/rerun`. */
export const rerunStartedSchema = { description: "the rerun's new session: it exists (its fork is stored) and its turns run now", ...idAnswer } as const

// One side of a compared turn (views/compare-sessions.ts TurnFacts).
const turnFactsSchema = {
  type: 'object',
  description: 'what the turn did in this session',
  required: ['text', 'toolCalls', 'reason', 'steps', 'usage', 'durationMs'],
  additionalProperties: false,
  properties: {
    text: { type: 'string', description: 'the final text' },
    toolCalls: {
      type: 'array',
      items: { type: 'object', required: ['name', 'arguments'], additionalProperties: false, properties: { name: string, arguments: { type: 'string', description: 'canonical JSON (sorted keys)' } } },
    },
    reason: { type: 'object', required: ['kind'], description: 'how the turn ended (turn/end reason)' },
    steps: integer,
    usage: {
      type: 'object',
      required: ['inputTokens', 'outputTokens'],
      properties: { inputTokens: integer, outputTokens: integer, cacheReadTokens: integer, cacheWriteTokens: integer, reasoningTokens: integer },
    },
    cost: costSchema,
    durationMs: { type: 'number' },
  },
} as const

const comparedSessionSchema = {
  type: 'object',
  required: ['id', 'title', 'turns'],
  additionalProperties: false,
  properties: {
    id: string,
    title: { type: 'string', description: "the first prompt, clipped ('' before any)" },
    turns: integer,
    forkedFrom: { type: 'string', description: 'on a rerun: the recorded session it reran' },
    provider: string,
    model: string,
  },
} as const

/** `200` of `GET /api/compare`. */
export const comparisonSchema = {
  description: 'two sessions compared turn by turn (ledgerloop diff): same behaviour = same final texts (unless ignored), tool calls and end reasons',
  type: 'object',
  required: ['a', 'b', 'same', 'ignoreText', 'turns'],
  additionalProperties: false,
  properties: {
    a: comparedSessionSchema,
    b: comparedSessionSchema,
    same: { type: 'boolean' },
    ignoreText: { type: 'boolean' },
    turns: {
      type: 'array',
      items: {
        type: 'object',
        required: ['turn', 'same', 'differences'],
        additionalProperties: false,
        properties: {
          turn: integer,
          same: { type: 'boolean' },
          differences: { type: 'array', items: { type: 'string' }, description: 'what differs, one line each' },
          a: turnFactsSchema,
          b: turnFactsSchema,
          textDiff: { type: 'string', description: 'the final texts as a word diff ([-removed-]{+added+}), when they differ' },
          textParts: {
            type: 'array',
            description: 'the same word diff as runs, when the texts differ',
            items: { type: 'object', required: ['op', 'text'], additionalProperties: false, properties: { op: { type: 'string', enum: ['same', 'removed', 'added'] }, text: string } },
          },
        },
      },
    },
  },
} as const
