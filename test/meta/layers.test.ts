import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// The import rule of the house (docs/architecture.md, "The import rule"): a file under src/ may import from its
// own folder and from folders of a LOWER layer, never from its own layer's siblings nor from a higher layer.
// This list is the one place the layer order is written down; the docs quote it.
const LAYERS: readonly (readonly string[])[] = [
  ['errors', 'hooks'], //        ground floor: they import nothing of the house
  ['json'],
  ['llm'], //                    the vocabulary of requests and streams, the adapters, the registry
  ['session'], //                the log, its fold, repair and verification; owns the SessionWriter port
  ['tools', 'views'], //         tool definitions; pure functions of events
  ['loop', 'store'], //          the agent loop (driver, turn, step, attempt); the stores: siblings, never each other
  ['plugins'], //                retry, permission, budgets, compaction, MCP, telemetry, sub-agents, invariants
  ['harness'], //                createHarness and the session ↔ writer adapter
  ['app'], //                    the one composition: config, providers, store specs, compose, replay
  ['worker', 'server', 'acp'], // shells: the multi-process runtime, the HTTP server, the ACP agent over stdio
  ['cli'], //                    the outermost shell: exit codes and hints live here
]

/**
 * Imports that break the rule today, each with the reason it is still here. Empty is the goal; a new entry
 * needs a reason a reviewer accepts.
 */
const KNOWN: ReadonlyMap<string, string> = new Map<string, string>([])

const src = fileURLToPath(new URL('../../src', import.meta.url))
const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((folder) => [folder, i] as const)))

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === 'web' ? [] : files(path)
    return path.endsWith('.ts') ? [path] : []
  })
}

/** Every module a file names: `import … from`, `import type`, `export … from`, `import x = require()`, `import()` and `import('…')` types. */
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

/** The top-level folder of src/ a path lies in ('' for the package entry files at src/ itself). */
function folderOf(path: string): string {
  const parts = relative(src, path).split(sep)
  return parts.length > 1 ? (parts[0] ?? '') : ''
}

/** A file's imports that break the rule, as `folder/file.ts → folder`. */
function breaches(path: string, text?: string): string[] {
  const own = folderOf(path)
  if (own === '') return [] // src/index.ts and src/postgres.ts are the package's entry points: they may name anything
  const ownRank = rank.get(own)
  if (ownRank === undefined) return [`${relative(src, path)}: folder ${own}/ has no layer`]
  const out = new Set<string>()
  for (const spec of specifiers(path, text)) {
    if (!spec.startsWith('.')) continue
    const target = folderOf(resolve(dirname(path), spec))
    if (target === own) continue
    const targetRank = rank.get(target)
    if (targetRank === undefined || targetRank >= ownRank) out.add(`${relative(src, path).split(sep).join('/')} → ${target === '' ? 'src/' : target}`)
  }
  return [...out]
}

describe('the import rule', () => {
  const all = files(src)

  it('every folder under src/ has a layer', () => {
    const folders = [...new Set(all.map(folderOf).filter((f) => f !== ''))]
    expect(folders.filter((f) => !rank.has(f))).toEqual([])
  })

  it('no file imports from its own layer’s siblings or from a higher layer (besides the known entries)', () => {
    expect(all.length).toBeGreaterThan(100)
    expect(all.flatMap((path) => breaches(path)).filter((b) => !KNOWN.has(b))).toEqual([])
  })

  it('every known entry still exists (a fixed one must leave the list)', () => {
    const found = new Set(all.flatMap((path) => breaches(path)))
    expect([...KNOWN.keys()].filter((k) => !found.has(k))).toEqual([])
  })

  it('loop/ imports nothing from store/; views/ nothing from cli/, server/, app/, worker/ or harness/', () => {
    const found = all.flatMap((path) => breaches(path))
    expect(found.filter((b) => b.startsWith('loop/') && b.endsWith('→ store'))).toEqual([])
    expect(found.filter((b) => /^views\/.* → (cli|server|app|worker|harness)$/.test(b) && !KNOWN.has(b))).toEqual([])
  })

  it('fails on an upward import added on purpose, and on a sibling import', () => {
    const at = (file: string): string => join(src, file)
    expect(breaches(at('loop/agent.ts'), "import type { SessionStore } from '../store/types.js'")).toEqual(['loop/agent.ts → store'])
    expect(breaches(at('session/session.ts'), "import { Agent } from '../loop/agent.js'")).toEqual(['session/session.ts → loop'])
    expect(breaches(at('views/timeline.ts'), "export { EXIT } from '../cli/turn-exit.js'")).toEqual(['views/timeline.ts → cli'])
    expect(breaches(at('llm/registry.ts'), "type S = import('../session/session.js').Session")).toEqual(['llm/registry.ts → session'])
    expect(breaches(at('llm/registry.ts'), "const m = await import('../index.js')")).toEqual(['llm/registry.ts → src/'])
    expect(breaches(at('harness/harness.ts'), "import { Session } from '../session/session.js'\nimport { x } from './y.js'")).toEqual([])
  })
})
