// Tool arguments arrive as the raw JSON text the model streamed: shown indented when they parse, as sent when not.

/** Indented JSON for text that parses, the text itself otherwise (a model's broken JSON is shown as it was). */
export function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}
