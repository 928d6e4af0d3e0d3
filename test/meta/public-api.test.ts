import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// The package's public surface, name by name: every export (values and types) of each entry point in
// package.json's "exports", compared with the list kept beside this test. A change to the list is a change
// to the API users build on; regenerate it on purpose with `UPDATE_PUBLIC_API=1 npx vitest run
// test/meta/public-api.test.ts` and say so in CHANGELOG.md.
const ENTRY_POINTS = {
  ledgerloop: '../../src/index.ts',
  'ledgerloop/sqlite': '../../src/store/sqlite.ts',
  'ledgerloop/postgres': '../../src/postgres.ts',
  'ledgerloop/server': '../../src/server/index.ts',
} as const
const LIST = fileURLToPath(new URL('./public-api.json', import.meta.url))

/** `name (value)` / `name (type)` for every export of every entry point, sorted. */
function publicSurface(): Record<string, string[]> {
  const paths = Object.values(ENTRY_POINTS).map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  const config = ts.getParsedCommandLineOfConfigFile(fileURLToPath(new URL('../../tsconfig.json', import.meta.url)), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })
  const program = ts.createProgram(paths, { ...(config?.options ?? {}), noEmit: true })
  const checker = program.getTypeChecker()
  const surface: Record<string, string[]> = {}
  for (const [entry, relative] of Object.entries(ENTRY_POINTS)) {
    const file = program.getSourceFile(fileURLToPath(new URL(relative, import.meta.url)))
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file)
    if (module === undefined) throw new Error(`cannot read the exports of ${entry}`)
    surface[entry] = checker
      .getExportsOfModule(module)
      .map((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
        return `${symbol.name} (${target.flags & ts.SymbolFlags.Value ? 'value' : 'type'})`
      })
      .sort()
  }
  return surface
}

describe('public API', () => {
  it('every entry point exports exactly the names in test/meta/public-api.json', () => {
    const surface = publicSurface()
    if (process.env.UPDATE_PUBLIC_API === '1') writeFileSync(LIST, `${JSON.stringify(surface, null, 2)}\n`)
    expect(surface).toEqual(JSON.parse(readFileSync(LIST, 'utf8')))
  }, 60_000)
})
