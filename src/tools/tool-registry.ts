import { HarnessError } from '../errors/harness-error.js'
import type { ToolSchema } from '../llm/types.js'
import { defineTool, type DefinedTool } from './define-tool.js'
import type { ToolDefinition } from './types.js'

/** Which of a registry's tools one agent is offered (see {@link ToolRegistry.offering}). */
export type ToolOffer = (tool: DefinedTool) => boolean

/** The tools a harness offers (`harness.tools`). Registration order does not matter: schemas sort by name. */
export class ToolRegistry {
  readonly #tools = new Map<string, DefinedTool>()
  #schemas: readonly ToolSchema[] | undefined
  // Set on a per-agent view: the registry it reads through, and which of its tools it offers.
  readonly #base: ToolRegistry | undefined
  readonly #offer: ToolOffer | undefined
  #baseSchemas: readonly ToolSchema[] | undefined

  /** An empty registry. */
  constructor()
  /** @internal A view (use {@link ToolRegistry.offering}). */
  constructor(base: ToolRegistry, offer: ToolOffer)
  constructor(base?: ToolRegistry, offer?: ToolOffer) {
    this.#base = base
    this.#offer = offer
  }

  /**
   * A live view of this registry for one agent: it sees later registrations, but only the tools `offer`
   * accepts — the model is offered only those, and a call of any other tool gets `UNKNOWN_TOOL`. `offer` must
   * answer the same for the same tool (its answers are cached until the registry changes). A view cannot
   * register tools.
   */
  offering(offer: ToolOffer): ToolRegistry {
    return new ToolRegistry(this, offer)
  }

  /**
   * Adds a tool (a `defineTool` result or a plain definition, defined on the way in); returns a disposer.
   * @throws HarnessError `DUPLICATE_TOOL` when the name is taken, `INVALID_TOOL` for a bad definition
   */
  register(tool: ToolDefinition<never> | DefinedTool<never>): () => void {
    if (this.#base !== undefined) throw new HarnessError('tools are registered on the harness, not on one agent\'s view of them', 'INVALID_STATE')
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

  /** The tool called `name`, if registered (and, on a view, offered). */
  get(name: string): DefinedTool | undefined {
    if (this.#base === undefined) return this.#tools.get(name)
    const tool = this.#base.get(name)
    return tool !== undefined && (this.#offer as ToolOffer)(tool) ? tool : undefined
  }

  /** Registered (on a view: offered) tool names. */
  names(): string[] {
    if (this.#base === undefined) return [...this.#tools.keys()]
    return this.#base.names().filter((name) => this.get(name) !== undefined)
  }

  /** Model-facing schemas, sorted by name (code-unit order) so the request header is stable. Cached. */
  schemas(): readonly ToolSchema[] {
    if (this.#base !== undefined) {
      const all = this.#base.schemas()
      if (all !== this.#baseSchemas) {
        this.#baseSchemas = all
        this.#schemas = Object.freeze(all.filter((schema) => this.get(schema.name) !== undefined))
      }
      return this.#schemas as readonly ToolSchema[]
    }
    this.#schemas ??= Object.freeze(
      [...this.#tools.values()].map((t) => t.schema).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    )
    return this.#schemas
  }
}
