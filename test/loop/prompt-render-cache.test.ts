import { describe, expect, it } from 'vitest'
import { PromptRegistry, PromptRenderCache } from '../../src/loop/prompt.js'

const ctx = { agent: { id: 'a' }, signal: new AbortController().signal }
const builtins = { cwd: '/w', provider: 'p', model: 'm' }

describe('PromptRenderCache (the prompt rendered before every step)', () => {
  it('reuses a text-only rendering until a section, a variable or a built-in changes', () => {
    const global = new PromptRegistry()
    const local = new PromptRegistry()
    global.section('persona', { text: 'You are {{who}} in {{cwd}}.' })
    global.variable('who', 'a helper')
    const cache = new PromptRenderCache()
    const first = cache.assemble([global, local], ctx, builtins)
    expect(first.system).toBe('You are a helper in /w.')
    expect(cache.assemble([global, local], ctx, builtins)).toEqual(first)

    local.variable('who', 'a reviewer')
    expect(cache.assemble([global, local], ctx, builtins).system).toBe('You are a reviewer in /w.')
    const dispose = local.section('rules', { order: 1, text: 'Be brief.' })
    expect(cache.assemble([global, local], ctx, builtins).system).toBe('You are a reviewer in /w.\n\nBe brief.')
    dispose()
    expect(cache.assemble([global, local], ctx, builtins).system).toBe('You are a reviewer in /w.')
    expect(cache.assemble([global, local], ctx, { ...builtins, cwd: '/x' }).system).toBe('You are a reviewer in /x.')
    expect(cache.assemble([local, global], ctx, { ...builtins, cwd: '/x' }).system).toBe('You are a helper in /x.')
  })

  it('evaluates function parts and variables before every step', () => {
    const layer = new PromptRegistry()
    let n = 0
    layer.section('clock', { text: () => `tick ${++n}` })
    const cache = new PromptRenderCache()
    expect(cache.assemble([layer], ctx, builtins).system).toBe('tick 1')
    expect(cache.assemble([layer], ctx, builtins).system).toBe('tick 2')
    const other = new PromptRegistry()
    let v = 0
    other.section('s', { text: 'v{{n}}' })
    other.variable('n', () => String(++v))
    expect(cache.assemble([other], ctx, builtins).system).toBe('v1')
    expect(cache.assemble([other], ctx, builtins).system).toBe('v2')
  })
})
