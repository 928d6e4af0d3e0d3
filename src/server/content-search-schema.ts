// Schemas of content search in `GET /api/sessions` (`grep`): kept apart from api-schemas.ts, which is at its
// size limit.

/** The `grep` query parameter of `GET /api/sessions`. */
export const grepQuerySchema = {
  type: 'string',
  maxLength: 100,
  description:
    "text of the sessions' prompts, answers or tool output (case-insensitive substring; surrounding whitespace trimmed); each listed session then carries `match`",
} as const

/** `match` of a session row listed with `grep`: the earliest matching prompt, answer or tool output. */
export const contentMatchSchema = {
  type: 'object',
  description: 'with grep: where the text was found',
  required: ['seq', 'part', 'snippet'],
  additionalProperties: false,
  properties: {
    seq: { type: 'integer', minimum: 0, description: 'seq of the event whose text matched' },
    part: { type: 'string', enum: ['prompt', 'answer', 'tool-output'] },
    snippet: { type: 'string', maxLength: 160, description: 'the match with some context, one line, `…` where cut' },
  },
} as const
