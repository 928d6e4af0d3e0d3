// Schemas of the file-change and rewind routes (src/server/rewind-routes.ts), for validation and the OpenAPI
// document. As in api-schemas.ts, the response schemas describe what is sent and never reshape it.

const string = { type: 'string' } as const
const hash = { type: ['string', 'null'], description: 'SHA-256 (hex) of the bytes; null: no file' } as const
const paths = { type: 'array', items: string } as const

const conflictSchema = {
  type: 'object',
  required: ['path', 'reason'],
  additionalProperties: false,
  properties: { path: string, reason: { type: 'string', description: 'why it was left as it is' } },
} as const

const callSchema = {
  type: 'object',
  required: ['callId', 'tool', 'seq'],
  additionalProperties: false,
  properties: { callId: string, tool: string, seq: { type: 'integer', minimum: 0, description: 'seq of its checkpoint/files event' } },
} as const

// The fields of a path's net change over a turn (app/turn-file-changes.ts TurnPathChange).
const pathChangeProperties = {
  path: { type: 'string', description: 'workspace-relative, /-separated' },
  root: { type: 'string', description: 'real absolute path of the workspace root' },
  change: { type: 'string', enum: ['created', 'modified', 'deleted', 'unchanged'], description: 'unchanged: changed and changed back within the turn' },
  before: { ...hash, description: "the bytes before the turn's first change of it (null: no file)" },
  after: { ...hash, description: "the bytes after the turn's last change of it (null: no file)" },
  calls: { type: 'array', items: callSchema, description: 'the tool calls that changed it, in log order' },
  untracked: { type: 'boolean', const: true, description: 'a side was over the checkpoint size limit: not kept, not restorable' },
} as const
const pathChangeRequired = ['path', 'root', 'change', 'before', 'after', 'calls'] as const

const hunkSchema = {
  type: 'object',
  required: ['oldStart', 'oldLines', 'newStart', 'newLines', 'lines'],
  additionalProperties: false,
  properties: {
    oldStart: { type: 'integer' },
    oldLines: { type: 'integer' },
    newStart: { type: 'integer' },
    newLines: { type: 'integer' },
    lines: { type: 'array', items: string, description: "each starts with ' ' (context), '-' (removed) or '+' (added)" },
  },
} as const

const restoreSchema = {
  type: 'object',
  description: 'a rewind logged in this session (checkpoint/restored): files put back between turns',
  required: ['seq', 'afterTurn', 'session', 'toTurn', 'restored', 'deleted', 'conflicts'],
  additionalProperties: false,
  properties: {
    seq: { type: 'integer', minimum: 0 },
    afterTurn: { type: 'integer', minimum: 0, description: 'the last turn that had ended when it was logged' },
    session: { type: 'string', description: "the session whose checkpoints it undid (a fork's parent, or this one)" },
    toTurn: { type: 'integer', minimum: 0 },
    restored: paths,
    deleted: paths,
    conflicts: { type: 'array', items: conflictSchema },
  },
} as const

/** `200` of `GET /api/sessions/{id}/file-changes`. */
export const fileChangesSchema = {
  description: 'per turn, the paths its tool calls changed (net over the turn, by content hash), and the rewinds logged in the session; no content (see …/file-changes/{turn})',
  type: 'object',
  required: ['turns', 'restores'],
  additionalProperties: false,
  properties: {
    turns: {
      type: 'array',
      description: 'turns that changed files, in turn order',
      items: {
        type: 'object',
        required: ['turn', 'files'],
        additionalProperties: false,
        properties: {
          turn: { type: 'integer', minimum: 1 },
          files: { type: 'array', items: { type: 'object', required: [...pathChangeRequired], additionalProperties: false, properties: pathChangeProperties } },
          incomplete: { type: 'boolean', const: true, description: "a bash scan stopped at its file limit: changes beyond it were not seen" },
        },
      },
    },
    restores: { type: 'array', items: restoreSchema },
  },
} as const

/** `200` of `GET /api/sessions/{id}/file-changes/{turn}`. */
export const turnFileDiffsSchema = {
  description: "one turn's file changes with their content: a unified line diff per text file, or why there is none (binary, over the size limit, a blob not in the store)",
  type: 'object',
  required: ['turn', 'files'],
  additionalProperties: false,
  properties: {
    turn: { type: 'integer', minimum: 1 },
    incomplete: { type: 'boolean', const: true },
    files: {
      type: 'array',
      items: {
        type: 'object',
        required: [...pathChangeRequired],
        additionalProperties: false,
        properties: {
          ...pathChangeProperties,
          beforeBytes: { type: 'integer', minimum: 0 },
          afterBytes: { type: 'integer', minimum: 0 },
          binary: { type: 'boolean', const: true, description: 'a side holds a NUL byte in its first 8 KiB: not diffed' },
          tooLarge: { type: 'boolean', const: true, description: 'a side is over maxBytes, or the diff too large to compute: not diffed' },
          note: { type: 'string', description: 'why there is no diff, for people' },
          added: { type: 'integer', minimum: 0 },
          removed: { type: 'integer', minimum: 0 },
          hunks: { type: 'array', items: hunkSchema, description: 'the unified diff (three lines of context)' },
        },
      },
    },
  },
} as const

/** Body of `POST /api/sessions/{id}/rewind` (harness.rewind's options). */
export const rewindBodySchema = {
  type: 'object',
  required: ['toTurn'],
  additionalProperties: false,
  properties: {
    toTurn: { type: 'integer', minimum: 0, description: 'the last turn to keep: files go back to their state before turn toTurn+1 (0: before the first turn, files only)' },
    files: { type: 'boolean', description: 'restore the workspace files (default true)' },
    conversation: { type: 'boolean', description: 'continue the conversation from a fork at the end of turn toTurn (default true)' },
    force: { type: 'boolean', description: 'also restore paths changed outside the agent (default false: they are conflicts, left as they are)' },
  },
} as const

/** `200` of `POST /api/sessions/{id}/rewind`. */
export const rewindResultSchema = {
  description: 'what the rewind did: the session to continue (the fork, or this session for a files-only rewind) and each path restored, deleted or left as a conflict',
  type: 'object',
  required: ['from', 'sessionId', 'forked', 'toTurn', 'restored', 'deleted', 'conflicts'],
  additionalProperties: false,
  properties: {
    from: { type: 'string', description: 'the session rewound' },
    sessionId: { type: 'string', description: 'the session to continue: the fork (forked: true), or `from` itself' },
    forked: { type: 'boolean', description: 'sessionId is a new fork of `from` at the end of turn toTurn' },
    toTurn: { type: 'integer', minimum: 0 },
    restored: { ...paths, description: 'paths written back with their earlier bytes, sorted' },
    deleted: { ...paths, description: 'paths removed because they did not exist at that point, sorted' },
    conflicts: { type: 'array', items: conflictSchema, description: 'paths left as they are (changed outside the agent, not restorable); force restores the former' },
  },
} as const
