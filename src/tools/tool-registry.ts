import { HarnessError } from '../errors/harness-error.js'
import type { ToolSchema } from '../llm/types.js'
import { defineTool, type DefinedTool } from './define-tool.js'
import type { ToolDefinition } from './types.js'

/** The tools a harness offers (`harness.tools`). Registration order does not matter: schemas sort by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, DefinedTool>()
  #schemas: readonly ToolSchema[] | undefined

  /**
   * Adds a tool (a `defineTool` result or a plain definition, defined on the way in); returns a disposer.
   * @throws HarnessError `DUPLICATE_TOOL` when the name is taken, `INVALID_TOOL` for a bad definition
   */
  register(tool: ToolDefinition<never> | DefinedTool<never>): () => void {
    const defined = defineTool(tool as unknown as ToolDefinition<Record<string, unknown>> & { parameters: never }) as unknown as DefinedTool
    if (this.#tools.has(defined.name)) throw new HarnessError(`a tool named '${defined.name}' is already registered`, 'DUPLICATE_TOOL')
    this.#tools.set(defined.name, defined)
    this.#schemas = undefined
    return () => {
      if (this.#tools.get(defined.name) === defined) {
        this.#tools.delete(defined.name)
        this.#schemas = undefined
      }
    }
  }

  /** The tool called `name`, if registered. */
  get(name: string): DefinedTool | undefined {
    return this.#tools.get(name)
  }

  /** Registered tool names. */
  names(): string[] {
    return [...this.#tools.keys()]
  }

  /** Model-facing schemas, sorted by name (code-unit order) so the request header is stable. Cached. */
  schemas(): readonly ToolSchema[] {
    this.#schemas ??= Object.freeze(
      [...this.#tools.values()].map((t) => t.schema).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    )
    return this.#schemas
  }
}
