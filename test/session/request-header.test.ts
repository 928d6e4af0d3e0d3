import { describe, expect, it } from 'vitest'
import { canonicalHeader, foldRequestHeader, headerEquals, requestProposal } from '../../src/session/request-header.js'
import type { RequestHeader } from '../../src/session/events.js'
import type { AdapterDefaults, LlmCallConfig } from '../../src/llm/types.js'
import { rawLog } from '../support/events.js'

const tool = { name: 'read_file', description: 'reads', parameters: { type: 'object', properties: { path: { type: 'string' } } } }

describe('canonicalHeader', () => {
  it('orders config keys provider, model, reasoningEffort, temperature, maxTokens, stop, whatever the input order', () => {
    const config = { stop: ['x'], maxTokens: 5, temperature: 0.5, reasoningEffort: 'high', model: 'm', provider: 'p' } as LlmCallConfig
    const h = canonicalHeader({ config })
    expect(Object.keys(h.config)).toEqual(['provider', 'model', 'reasoningEffort', 'temperature', 'maxTokens', 'stop'])
    expect(JSON.stringify(h)).toBe(JSON.stringify(canonicalHeader({ config: { provider: 'p', model: 'm', reasoningEffort: 'high', temperature: 0.5, maxTokens: 5, stop: ['x'] } })))
  })

  it('omits absent config fields but keeps falsy present ones (temperature 0, empty stop)', () => {
    expect(canonicalHeader({ config: { provider: 'p', model: 'm' } })).toEqual({ config: { provider: 'p', model: 'm' } })
    expect(canonicalHeader({ config: { provider: 'p', model: 'm', temperature: 0, stop: [] } }).config).toEqual({ provider: 'p', model: 'm', temperature: 0, stop: [] })
  })

  it('keeps adapterDefaults only with at least one true marker, and only the true markers', () => {
    const config = { provider: 'p', model: 'm', maxTokens: 9 }
    expect(canonicalHeader({ config, adapterDefaults: {} })).not.toHaveProperty('adapterDefaults')
    expect(canonicalHeader({ config, adapterDefaults: { maxTokens: false } as unknown as AdapterDefaults })).not.toHaveProperty('adapterDefaults')
    expect(canonicalHeader({ config, adapterDefaults: { maxTokens: true } }).adapterDefaults).toEqual({ maxTokens: true })
    const both = canonicalHeader({ config, adapterDefaults: { maxTokens: true, reasoningEffort: true } })
    expect(Object.keys(both.adapterDefaults ?? {})).toEqual(['reasoningEffort', 'maxTokens'])
  })

  it('omits an empty system and empty tools, keeps non-empty ones, in the order config, adapterDefaults, system, tools', () => {
    const config = { provider: 'p', model: 'm' }
    expect(canonicalHeader({ config, system: '', tools: [] })).toEqual({ config })
    const h = canonicalHeader({ tools: [tool], system: 'be brief', adapterDefaults: { maxTokens: true }, config })
    expect(Object.keys(h)).toEqual(['config', 'adapterDefaults', 'system', 'tools'])
    expect(h.system).toBe('be brief')
    expect(h.tools).toEqual([tool])
  })

  it('does not alias the caller stop array', () => {
    const stop = ['a']
    const h = canonicalHeader({ config: { provider: 'p', model: 'm', stop } })
    stop.push('b')
    expect(h.config.stop).toEqual(['a'])
  })
})

describe('headerEquals', () => {
  const base: RequestHeader = canonicalHeader({ config: { provider: 'p', model: 'm', maxTokens: 10, stop: ['x'] }, adapterDefaults: { maxTokens: true }, system: 's', tools: [tool] })

  it('is true for equal headers built separately', () => {
    const again = canonicalHeader({ config: { provider: 'p', model: 'm', maxTokens: 10, stop: ['x'] }, adapterDefaults: { maxTokens: true }, system: 's', tools: [JSON.parse(JSON.stringify(tool))] })
    expect(headerEquals(base, again)).toBe(true)
    expect(headerEquals(undefined, undefined)).toBe(true)
    expect(headerEquals(base, undefined)).toBe(false)
  })

  it.each<[string, RequestHeader]>([
    ['provider', { ...base, config: { ...base.config, provider: 'q' } }],
    ['model', { ...base, config: { ...base.config, model: 'n' } }],
    ['maxTokens', { ...base, config: { ...base.config, maxTokens: 11 } }],
    ['temperature', { ...base, config: { ...base.config, temperature: 1 } }],
    ['reasoningEffort', { ...base, config: { ...base.config, reasoningEffort: 'low' } }],
    ['stop element', { ...base, config: { ...base.config, stop: ['y'] } }],
    ['stop length', { ...base, config: { ...base.config, stop: ['x', 'y'] } }],
    ['a marker', { ...base, adapterDefaults: { maxTokens: true, reasoningEffort: true } }],
    ['a missing marker', { config: base.config, system: 's', tools: [tool] }],
    ['system', { ...base, system: 't' }],
    ['tool count', { ...base, tools: [tool, tool] }],
    ['tool content', { ...base, tools: [{ ...tool, description: 'other' }] }],
    ['tool key order', { ...base, tools: [{ description: tool.description, name: tool.name, parameters: tool.parameters }] }],
  ])('tells headers apart by %s', (_, other) => {
    expect(headerEquals(base, other)).toBe(false)
    expect(headerEquals(other, base)).toBe(false)
  })
})

describe('requestProposal', () => {
  it('strips exactly the fields marked as adapter defaults and keeps explicit ones', () => {
    const config = { provider: 'p', model: 'm', reasoningEffort: 'low', temperature: 0.1, maxTokens: 100, stop: ['x'] }
    expect(requestProposal(canonicalHeader({ config, adapterDefaults: { maxTokens: true } }))).toEqual({ provider: 'p', model: 'm', reasoningEffort: 'low', temperature: 0.1, stop: ['x'] })
    expect(requestProposal(canonicalHeader({ config, adapterDefaults: { reasoningEffort: true } }))).toEqual({ provider: 'p', model: 'm', temperature: 0.1, maxTokens: 100, stop: ['x'] })
    expect(requestProposal(canonicalHeader({ config, adapterDefaults: { reasoningEffort: true, maxTokens: true } }))).toEqual({ provider: 'p', model: 'm', temperature: 0.1, stop: ['x'] })
    expect(requestProposal(canonicalHeader({ config }))).toEqual(config)
  })

  it('does not modify the header', () => {
    const header = canonicalHeader({ config: { provider: 'p', model: 'm', maxTokens: 5 }, adapterDefaults: { maxTokens: true } })
    requestProposal(header)
    expect(header.config.maxTokens).toBe(5)
  })
})

describe('foldRequestHeader', () => {
  it('returns the latest header in the log, or undefined', () => {
    expect(foldRequestHeader([])).toBeUndefined()
    const events = rawLog([
      ['request/header', { header: { config: { provider: 'p', model: 'a' } }, reason: 'initial' }],
      ['user/message', {}],
      ['request/header', { header: { config: { provider: 'p', model: 'b' } }, reason: 'change' }],
      ['turn/end', {}],
    ])
    expect(foldRequestHeader(events)?.config.model).toBe('b')
  })
})
