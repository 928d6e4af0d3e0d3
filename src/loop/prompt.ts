import { HarnessError } from '../errors/harness-error.js'

/** What prompt text functions receive. */
export interface PromptContext {
  /** The agent the prompt is assembled for. */
  readonly agent: { readonly id: string }
  /** The turn's signal. */
  readonly signal: AbortSignal
}

/** A prompt section/context body: fixed text, or a function evaluated before every step (`undefined` = omit). */
export type PromptText = string | ((ctx: PromptContext) => string | undefined)

/** A named, ordered piece of prompt text. */
export interface PromptPart {
  /** Sort key, ascending (default 0); ties keep registration order. */
  readonly order?: number
  readonly text: PromptText
}

/** The result of assembling the prompt for one step. */
export interface PromptAssembly {
  /** The rendered system prompt ('' when empty). */
  readonly system: string
  /** Rendered non-empty runtime-context sections, in order. */
  readonly contexts: readonly { readonly name: string; readonly text: string }[]
}

const VARIABLE_NAME = /^[a-z][a-z0-9_]*$/

/**
 * Prompt sections, runtime-context sections and variables (`harness.prompt`, `agent.ctx.prompt`). Everything
 * is re-evaluated before every step, so a change shows up in the next request (and in its logged header).
 * @example
 * ```ts
 * harness.prompt.section('rules', { order: 10, text: 'Answer in {{language}}.' })
 * harness.prompt.variable('language', 'English')
 * harness.prompt.context('clock', { text: () => `Now: ${new Date().toISOString()}` })
 * ```
 */
export class PromptRegistry {
  readonly #sections = new Map<string, PromptPart>()
  readonly #contexts = new Map<string, PromptPart>()
  readonly #variables = new Map<string, string | ((ctx: PromptContext) => string | undefined)>()
  #revision = 0
  readonly #changed = (): void => {
    this.#revision++
  }

  /** @internal Changes whenever a section, context or variable is added, replaced or removed. */
  get revision(): number {
    return this.#revision
  }

  /** @internal True when some part or variable is a function, so a rendering holds for one step only. */
  get dynamic(): boolean {
    for (const part of this.#sections.values()) if (typeof part.text === 'function') return true
    for (const part of this.#contexts.values()) if (typeof part.text === 'function') return true
    for (const value of this.#variables.values()) if (typeof value === 'function') return true
    return false
  }

  /** Adds a system-prompt section; returns a disposer. Same name replaces (the disposer restores nothing). */
  section(name: string, part: PromptPart): () => void {
    return put(this.#sections, checkName(name, 'section'), checkPart(name, part), this.#changed)
  }

  /** Adds a runtime-context section (rendered into the runtime-context snapshot message). */
  context(name: string, part: PromptPart): () => void {
    return put(this.#contexts, checkName(name, 'context'), checkPart(name, part), this.#changed)
  }

  /** Defines `{{name}}` for interpolation. */
  variable(name: string, value: string | ((ctx: PromptContext) => string | undefined)): () => void {
    if (!VARIABLE_NAME.test(name)) throw new HarnessError(`prompt variable name '${name}' must match ${String(VARIABLE_NAME)}`, 'INVALID_CONFIG')
    return put(this.#variables, name, value, this.#changed)
  }

  /**
   * Renders sections and contexts for one step. `layers` are consulted farthest first (global, then agent):
   * a nearer layer's part shadows a farther one of the same name.
   * @throws HarnessError `PROMPT_RENDER` for an unknown or undefined `{{variable}}` or a malformed group
   */
  static assemble(layers: readonly PromptRegistry[], ctx: PromptContext, builtins: Readonly<Record<string, string>>): PromptAssembly {
    const variables = new Map<string, string | undefined>(Object.entries(builtins))
    for (const layer of layers) for (const [name, value] of layer.#variables) variables.set(name, typeof value === 'function' ? value(ctx) : value)
    const merge = (pick: (r: PromptRegistry) => Map<string, PromptPart>): [string, PromptPart][] => {
      const merged = new Map<string, PromptPart>()
      for (const layer of layers) for (const [name, part] of pick(layer)) merged.set(name, part)
      return [...merged].map((entry, i) => ({ entry, i })).sort((a, b) => (a.entry[1].order ?? 0) - (b.entry[1].order ?? 0) || a.i - b.i).map((x) => x.entry)
    }
    const render = ([name, part]: [string, PromptPart]): { name: string; text: string } | undefined => {
      const raw = typeof part.text === 'function' ? part.text(ctx) : part.text
      if (raw === undefined) return undefined
      if (typeof raw !== 'string') throw new HarnessError(`prompt part '${name}' rendered a ${typeof raw}, not a string`, 'PROMPT_RENDER')
      const text = interpolate(raw, variables, name)
      return text.trim() === '' ? undefined : { name, text }
    }
    const sections = merge((r) => r.#sections).map(render).filter((s) => s !== undefined)
    const contexts = merge((r) => r.#contexts).map(render).filter((s) => s !== undefined)
    return { system: sections.map((s) => s.text).join('\n\n'), contexts }
  }
}

/** The runtime-context snapshot text: '' when there are no sections, else a preamble and the sections. */
export function joinContextSections(sections: readonly { readonly name: string; readonly text: string }[]): string {
  if (sections.length === 0) return ''
  const preamble = 'Runtime context (this snapshot replaces any earlier runtime context):'
  return [preamble, ...sections.map((s) => s.text)].join('\n\n')
}

function interpolate(text: string, variables: Map<string, string | undefined>, part: string): string {
  return text.replace(/\{\{(.*?)\}\}/g, (_whole, inner: string) => {
    const name = inner.trim()
    if (!VARIABLE_NAME.test(name)) throw new HarnessError(`prompt part '${part}': malformed variable group '{{${inner}}}'`, 'PROMPT_RENDER')
    if (!variables.has(name)) throw new HarnessError(`prompt part '${part}': unknown variable '{{${name}}}'`, 'PROMPT_RENDER')
    const value = variables.get(name)
    if (value === undefined) throw new HarnessError(`prompt part '${part}': variable '{{${name}}}' has no value`, 'PROMPT_RENDER')
    return value
  })
}

function put<V>(map: Map<string, V>, name: string, value: V, changed: () => void): () => void {
  map.set(name, value)
  changed()
  return () => {
    if (map.get(name) !== value) return
    map.delete(name)
    changed()
  }
}

function checkName(name: string, what: string): string {
  if (typeof name !== 'string' || name === '') throw new HarnessError(`a prompt ${what} needs a non-empty name`, 'INVALID_CONFIG')
  return name
}

function checkPart(name: string, part: PromptPart): PromptPart {
  if (typeof part !== 'object' || part === null || (typeof part.text !== 'string' && typeof part.text !== 'function')) {
    throw new HarnessError(`prompt part '${name}' needs text (a string or a function)`, 'INVALID_CONFIG')
  }
  return part
}

/**
 * Renders a stack of prompt layers before each step and keeps the last rendering while it cannot change: when
 * every part and variable is text, it stays valid until a layer changes (its revision) or a built-in does.
 * Function parts and variables are evaluated every step, so such prompts are never reused.
 * @internal
 */
export class PromptRenderCache {
  #last: { layers: readonly PromptRegistry[]; revisions: number[]; builtins: Readonly<Record<string, string>>; assembly: PromptAssembly } | undefined

  /** The same as {@link PromptRegistry.assemble}, reused while it is known to render the same. */
  assemble(layers: readonly PromptRegistry[], ctx: PromptContext, builtins: Readonly<Record<string, string>>): PromptAssembly {
    const last = this.#last
    if (last !== undefined && sameLayers(last, layers) && sameBuiltins(last.builtins, builtins)) return last.assembly
    const assembly = PromptRegistry.assemble(layers, ctx, builtins)
    this.#last = layers.some((l) => l.dynamic)
      ? undefined
      : {
          layers: [...layers],
          revisions: layers.map((l) => l.revision),
          builtins: { ...builtins },
          assembly: Object.freeze({ system: assembly.system, contexts: Object.freeze(assembly.contexts) }),
        }
    return assembly
  }
}

function sameLayers(last: { layers: readonly PromptRegistry[]; revisions: number[] }, layers: readonly PromptRegistry[]): boolean {
  if (last.layers.length !== layers.length) return false
  for (let i = 0; i < layers.length; i++) if (last.layers[i] !== layers[i] || last.revisions[i] !== (layers[i] as PromptRegistry).revision) return false
  return true
}

function sameBuiltins(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  let n = 0
  for (const key in b) {
    if (a[key] !== b[key]) return false
    n++
  }
  return n === Object.keys(a).length
}
