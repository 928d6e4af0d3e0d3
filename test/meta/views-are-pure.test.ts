import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// views/ are pure functions of events: the CLI, the server and the page share them, so they must not reach up
// into the shells or the composition (issue 23, item 5). The layer-order test of item 8 will subsume this one.
const src = fileURLToPath(new URL('../../src', import.meta.url))
const views = join(src, 'views')

/** Top-level folders of src/ that views/ must not import from. */
const FORBIDDEN = ['cli', 'server', 'worker', 'app', 'harness', 'plugins']

/**
 * Files allowed to break the rule for now. replay-session.ts runs the loop (it builds a harness); a later step of
 * issue 23 moves it to app/, and its entry goes with it.
 */
const ALLOWED = new Set(['views/replay-session.ts'])

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** Every module a file names: `import … from`, `import type`, `export … from`, `import x = require()` and `import()`. */
function specifiers(path: string, text = readFileSync(path, 'utf8')): string[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true)
  const out: string[] = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      out.push(node.moduleSpecifier.text)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      out.push(node.moduleReference.expression.text)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
      out.push(node.arguments[0].text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      out.push(node.argument.literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return out
}

/** Imports of a views/ file that land in a forbidden folder, as `views/file.ts → src/folder/…`. */
function upwardImports(path: string): string[] {
  return specifiers(path)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => relative(src, resolve(dirname(path), spec)))
    .filter((target) => FORBIDDEN.includes(target.split(sep)[0] ?? ''))
    .map((target) => `${relative(src, path)} → src/${target.split(sep).join('/')}`)
}

describe('views/ are pure', () => {
  it(`no file under src/views/ imports from ${FORBIDDEN.map((f) => `${f}/`).join(', ')}`, () => {
    const checked = files(views).filter((path) => !ALLOWED.has(relative(src, path).split(sep).join('/')))
    expect(checked.length).toBeGreaterThan(0)
    expect(checked.flatMap(upwardImports)).toEqual([])
  })

  it('sees every kind of import (a check of the parser above, so a new form cannot slip past it)', () => {
    const probe = [
      "import { a } from '../cli/a.js'",
      "import type { B } from '../server/b.js'",
      "export { c } from '../worker/c.js'",
      "import d = require('../app/d.js')",
      "const e = await import('../harness/e.js')",
      "type F = import('../plugins/f.js').F",
    ].join('\n')
    expect(specifiers(join(views, 'probe.ts'), probe)).toEqual(['../cli/a.js', '../server/b.js', '../worker/c.js', '../app/d.js', '../harness/e.js', '../plugins/f.js'])
  })
})
