// Compile the child and the drivers to plain ESM once per benchmark run, so a
// child process starts with plain `node` (no TypeScript loader on the module
// path: tsx's loader hooks add seconds to every start). npm packages stay
// external and load from node_modules as usual; the ledgerloop build that
// drivers/ledgerloop*.ts import as ../../dist/... stays external too, pinned to
// its absolute path.
import { build, type Plugin } from 'esbuild'
import { dirname, join, resolve } from 'node:path'

/** Keep imports of the main package's dist/ external, rewritten to absolute paths. */
function mainDistExternal(distDir: string): Plugin {
  return {
    name: 'ledgerloop-dist-external',
    setup(b) {
      b.onResolve({ filter: /\/dist\/.+\.js$/ }, (args) => {
        const target = resolve(args.resolveDir, args.path)
        if (!target.startsWith(distDir)) return undefined
        return { path: target, external: true }
      })
    },
  }
}

export interface BuiltEntry {
  readonly source: string
  readonly output: string
}

/**
 * Bundle each entry (our own TypeScript only) to `out` next to its package's node_modules.
 * @param benchDir - the bench/ folder.
 * @param entries - source files relative to bench/, with the output file relative to bench/.
 */
export async function compileEntries(benchDir: string, entries: readonly BuiltEntry[]): Promise<void> {
  const distDir = resolve(benchDir, '..', 'dist')
  await Promise.all(entries.map((entry) => build({
    entryPoints: [join(benchDir, entry.source)],
    outfile: join(benchDir, entry.output),
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: false,
    logLevel: 'error',
    plugins: [mainDistExternal(distDir)],
    absWorkingDir: dirname(join(benchDir, entry.source)),
  })))
}
