import { describe, expect, it } from 'vitest'
import { classifyProviderError, isContextOverflow, redactSecrets, retryAfterMs } from '../../../src/llm/adapters/provider-failure.js'

describe('provider failure mapping', () => {
  it('parses retry-after-ms, Retry-After seconds and HTTP dates; drops junk and past dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250.5' }), now)).toBe(251)
    expect(retryAfterMs(new Headers({ 'retry-after': '3' }), now)).toBe(3000)
    expect(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:20 GMT' }), now)).toBe(20_000)
    expect(retryAfterMs(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:59:00 GMT' }), now)).toBeUndefined()
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined()
    expect(retryAfterMs(new Headers({ 'retry-after': '0' }), now)).toBeUndefined()
    expect(retryAfterMs(new Headers(), now)).toBeUndefined()
  })

  it('recognises overflow wording conservatively', () => {
    expect(isContextOverflow({ message: "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens" })).toBe(true)
    expect(isContextOverflow({ message: 'prompt is too long: 210000 tokens > 200000 maximum' })).toBe(true)
    expect(isContextOverflow({ code: 'context_length_exceeded', message: 'too many tokens' })).toBe(true)
    expect(isContextOverflow({ message: 'max_tokens must be less than or equal to 8192' })).toBe(false)
    expect(isContextOverflow({ message: 'messages: text content blocks must be non-empty' })).toBe(false)
    expect(isContextOverflow({ message: 'Invalid max_tokens value, the valid range of max_tokens is [1, 393216]' })).toBe(false)
  })

  it('classifies by status first, then by provider type', () => {
    expect(classifyProviderError({ status: 403 })).toBe('AUTH')
    expect(classifyProviderError({ status: 429, code: 'insufficient_quota' })).toBe('INSUFFICIENT_BALANCE')
    expect(classifyProviderError({ type: 'overloaded_error' })).toBe('SERVER')
    expect(classifyProviderError({ type: 'rate_limit_error' })).toBe('RATE_LIMIT')
    expect(classifyProviderError({ status: 418 })).toBe('HTTP_418')
    expect(classifyProviderError({})).toBe('UNKNOWN')
  })

  it('redacts every occurrence of a secret', () => {
    expect(redactSecrets('key sk-abc123 and again sk-abc123', ['sk-abc123'])).toBe('key [redacted] and again [redacted]')
  })
})
