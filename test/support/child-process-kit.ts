import { symlinkSync } from 'node:fs'
import { join, parse, resolve } from 'node:path'
import { build } from 'esbuild'

/** A seeded PRNG (mulberry32): the kill tests pick their moments from it, so a seed replays a run. */
export function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Bundles a test child's TypeScript entry into `outDir/<name>.mjs` and returns the file. Starting a child under
 * `node --import tsx` costs seconds per process on a small, loaded box (the loader transpiles and resolves every
 * module); a bundle of the same sources starts in a fraction of that, and the kill tests start one per kill.
 */
export async function bundleTestChild(entry: string, outDir: string, external: readonly string[] = []): Promise<string> {
  const outfile = join(outDir, `${parse(entry).name}.mjs`)
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'error',
    external: [...external],
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  })
  return outfile
}

/**
 * Bundles a child that loads better-sqlite3 (a native addon, which cannot be bundled: it finds its `.node` file
 * from its own package folder). The module stays external, and `outDir/node_modules` links to the repository's,
 * so the bundle's `import 'better-sqlite3'` resolves there. Removing `outDir` removes the link, not its target.
 */
export async function bundleSqliteChild(entry: string, outDir: string): Promise<string> {
  symlinkSync(resolve(import.meta.dirname, '../../node_modules'), join(outDir, 'node_modules'), 'dir')
  return bundleTestChild(entry, outDir, ['better-sqlite3'])
}
