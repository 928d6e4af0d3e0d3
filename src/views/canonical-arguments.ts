// Tool-call arguments as behaviour compares them: the same JSON object whatever the key order or spacing the
// model streamed, so `{"a":1, "b":2}` and `{"b":2,"a":1}` are one call. Text that is not JSON compares as itself.

/** The canonical text of a tool call's arguments: JSON with object keys sorted and no spacing; non-JSON unchanged. */
export function canonicalArguments(args: string | unknown): string {
  let value: unknown = args
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args)
    } catch {
      return args
    }
  }
  return JSON.stringify(sortKeys(value)) ?? 'null'
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key])
  return out
}
