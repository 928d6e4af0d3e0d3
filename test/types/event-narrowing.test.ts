import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// Typed events are a compile-time promise, so they are tested by compiling: the fixture narrows `event.data`
// by `event.type` (core types, ledgerloop's plugin types, a user-declared type, hook payloads) and marks each
// misuse with `@ts-expect-error`, which TypeScript itself reports when the line does compile (TS2578). A
// second, in-memory file holds misuse without directives: its errors prove the diagnostics are really read.
const FIXTURE = fileURLToPath(new URL('./fixtures/event-narrowing.ts', import.meta.url))
const MISUSE = fileURLToPath(new URL('./fixtures/misuse.virtual.ts', import.meta.url))
const MISUSE_SOURCE = [
  "import type { SessionEvent } from 'ledgerloop'",
  'declare const event: SessionEvent',
  "if (event.type === 'turn/start') console.log(event.data.reason)",
  "if (event.type === 'turn/end') console.log(event.data.reason.error)",
  '',
].join('\n')

function compile(): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(fileURLToPath(new URL('../../tsconfig.json', import.meta.url)), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })
  if (config === undefined) throw new Error('cannot read tsconfig.json')
  const options = { ...config.options, noEmit: true }
  const host = ts.createCompilerHost(options)
  const readFile = host.readFile.bind(host)
  const getSourceFile = host.getSourceFile.bind(host)
  host.readFile = (name) => (name === MISUSE ? MISUSE_SOURCE : readFile(name))
  host.fileExists = (name) => name === MISUSE || ts.sys.fileExists(name)
  host.getSourceFile = (name, version, onError, create) =>
    name === MISUSE ? ts.createSourceFile(name, MISUSE_SOURCE, version) : getSourceFile(name, version, onError, create)
  return ts.createProgram([FIXTURE, MISUSE], options, host)
}

function describeDiagnostic(d: ts.Diagnostic): string {
  const where = d.file === undefined || d.start === undefined ? '' : `line ${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: `
  return `${where}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`
}

describe('typed events (compiled with the TypeScript compiler, strict)', () => {
  const program = compile()
  const diagnosticsOf = (file: string): ts.Diagnostic[] => {
    const source = program.getSourceFile(file)
    if (source === undefined) throw new Error(`${file} is not in the program`)
    return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
  }

  it('event.type narrows event.data, and every @ts-expect-error misuse fails to compile', () => {
    const directives = readFileSync(FIXTURE, 'utf8').match(/\/\/ @ts-expect-error/g) ?? []
    expect(directives.length).toBe(10)
    expect(diagnosticsOf(FIXTURE).map(describeDiagnostic)).toEqual([])
  })

  it('misuse without directives is reported (the diagnostics above are real)', () => {
    const found = diagnosticsOf(MISUSE).map(describeDiagnostic)
    expect(found).toHaveLength(2)
    expect(found[0]).toMatch(/^line 3: TS2339 Property 'reason' does not exist/)
    expect(found[1]).toMatch(/^line 4: TS2339 Property 'error' does not exist/)
  })
})
