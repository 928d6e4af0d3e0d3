import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const src = fileURLToPath(new URL('../../src', import.meta.url))

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** Exported declarations without a `/** … *\/` comment, as `file: name`. */
function undocumented(path: string): string[] {
  const text = readFileSync(path, 'utf8')
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true)
  const out: string[] = []
  const seen = new Set<string>()
  for (const node of file.statements) {
    const exported = ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) === true
    if (!exported || ts.isExportDeclaration(node)) continue
    const hasDoc = ts.getJSDocCommentsAndTags(node).length > 0 || /\/\*\*[\s\S]*?\*\/\s*$/.test(text.slice(0, node.getStart()))
    const name = (node as ts.DeclarationStatement).name?.getText() ?? ts.SyntaxKind[node.kind]
    // Later overload signatures and the implementation share the first overload's comment.
    if (!hasDoc && !(ts.isFunctionDeclaration(node) && seen.has(name))) out.push(`${relative(src, path)}: ${name}`)
    seen.add(name)
  }
  return out
}

describe('public surface hygiene', () => {
  it('every exported declaration in src/ has a TSDoc comment', () => {
    expect(files(src).flatMap(undocumented)).toEqual([])
  })

  it('no source file grows past ~600 lines', () => {
    const long = files(src).filter((f) => readFileSync(f, 'utf8').split('\n').length > 600)
    expect(long).toEqual([])
  })
})
