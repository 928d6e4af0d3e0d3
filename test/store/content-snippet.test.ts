// Issue 30, target 6: the snippet a content match shows is bounded, holds the match, and never splits a
// character; matching is a case-insensitive substring test (the rule every store applies).
import fc from 'fast-check'
import { expect, it } from 'vitest'
import { GREP_MAX, grepNeedle, indexedTextOf, matchInText, SNIPPET_MAX, snippetAt } from '../../src/store/content-search.js'

const collapse = (s: string): string => s.replace(/\s+/g, ' ')
const textChars = fc.constantFrom('a', 'B', 'c', ' ', '\n', '\t', 'é', 'Σ', 'ς', '😀', 'x', 'Y', '.', '"', '\\')
const text = fc.array(textChars, { maxLength: 700 }).map((cs) => cs.join(''))

it('a needle cut from the text is found; the snippet is at most SNIPPET_MAX characters, holds the match, splits no character', () => {
  fc.assert(
    fc.property(text, fc.nat(), fc.integer({ min: 1, max: GREP_MAX }), (t, start, length) => {
      const chars = [...t]
      fc.pre(chars.length > 0)
      const from = start % chars.length
      const needle = chars.slice(from, from + length).join('').trim()
      fc.pre(needle !== '')
      const match = matchInText({ seq: 3, part: 'answer', text: t }, needle)
      expect(match).toBeDefined()
      const snippet = match?.snippet ?? ''
      expect(snippet.length).toBeLessThanOrEqual(SNIPPET_MAX)
      const shown = collapse(needle).slice(0, SNIPPET_MAX - 2).replace(/[\ud800-\udbff]$/, '')
      expect(new RegExp(shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'iu').test(snippet)).toBe(true)
      expect(snippet).not.toMatch(/\s\s|[\n\t]/)
      expect(snippet).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/)
      expect(match?.seq).toBe(3)
    }),
    { numRuns: 400 },
  )
})

it('a whole short text is its own snippet, uncut; a long one is marked … where it was cut', () => {
  fc.assert(
    fc.property(text, (t) => {
      const body = `${t}NEEDLE${t}`
      const at = body.indexOf('NEEDLE')
      const snippet = snippetAt(body, at, 6)
      const whole = collapse(body).trim()
      if (whole.length <= SNIPPET_MAX - 2) expect(snippet).toBe(whole)
      else expect(snippet.startsWith('…') || snippet.endsWith('…')).toBe(true)
      expect(snippet).toContain('NEEDLE')
    }),
    { numRuns: 300 },
  )
})

it('matching ignores case both ways and finds nothing that is not there', () => {
  expect(matchInText({ seq: 0, part: 'prompt', text: 'Deploy the SERVICE now' }, 'service')?.snippet).toBe('Deploy the SERVICE now')
  expect(matchInText({ seq: 0, part: 'prompt', text: 'ΣΊΣΥΦΟΣ' }, 'σίσυφος')).toBeDefined()
  expect(matchInText({ seq: 0, part: 'prompt', text: 'abc' }, 'abd')).toBeUndefined()
  fc.assert(
    fc.property(text, (t) => {
      expect(matchInText({ seq: 0, part: 'prompt', text: t.replace(/q/gi, '') }, 'q')).toBeUndefined()
    }),
  )
})

it('grep is trimmed, blank means no content search, and anything else refused is INVALID_INPUT', () => {
  expect(grepNeedle('  port ')).toBe('port')
  expect(grepNeedle('   ')).toBeUndefined()
  expect(grepNeedle(undefined)).toBeUndefined()
  expect(() => grepNeedle('x'.repeat(GREP_MAX + 1))).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
  expect(() => grepNeedle(['a'])).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }))
})

it('only user prompts, visible answers and tool result text are searchable', () => {
  const message = (type: string, data: unknown) => ({ type, seq: 1, data }) as Parameters<typeof indexedTextOf>[0]
  expect(indexedTextOf(message('user/message', { source: { kind: 'user' }, content: [{ type: 'text', text: 'hi' }] }))?.part).toBe('prompt')
  expect(indexedTextOf(message('user/message', { source: { kind: 'plugin', plugin: 'x' }, content: [{ type: 'text', text: 'injected' }] }))).toBeUndefined()
  expect(indexedTextOf(message('assistant/message', { message: { content: [{ type: 'reasoning', text: 'secret thoughts' }, { type: 'text', text: 'answer' }, { type: 'tool-call', id: 'c', name: 'n', arguments: '{"k":"sk-123"}' }] } }))?.text).toBe('answer')
  expect(indexedTextOf(message('tool/result', { message: { content: [{ type: 'tool-result', toolCallId: 'c', content: [{ type: 'text', text: 'out' }] }] } }))).toEqual({ seq: 1, part: 'tool-output', text: 'out' })
  expect(indexedTextOf(message('tool/call', { name: 'bash', arguments: '{"cmd":"echo sk-123"}' }))).toBeUndefined()
  expect(indexedTextOf(message('request/header', { header: { system: 'sys' } }))).toBeUndefined()
})
