// Decide, before starting anything, which rows can run, and say exactly why not.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { BenchConfig, Runtime } from './configs.ts'

/** Does `file` import cleanly under `node` and export every name in `names`? */
function exportsNames(node: string, file: string, names: readonly string[]): string | undefined {
  const code = `import(${JSON.stringify(`file://${file}`)}).then((m) => {
    const missing = ${JSON.stringify(names)}.filter((n) => !(n in m))
    console.log(missing.length ? 'missing: ' + missing.join(', ') : 'ok')
  }, (e) => console.log('import failed: ' + String(e && e.message || e).split('\\n')[0]))`
  const out = spawnSync(node, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 60_000 })
  const line = (out.stdout ?? '').trim().split('\n').pop() ?? ''
  return line === 'ok' ? undefined : line || `check exited ${out.status}: ${(out.stderr ?? '').trim().slice(0, 200)}`
}

/** Why this build's JsonlStore refuses `fsync: 'interval'` (undefined when it accepts it). */
function intervalRefused(node: string, indexFile: string): string | undefined {
  const code = `import(${JSON.stringify(`file://${indexFile}`)}).then((m) => {
    try { new m.JsonlStore({ dir: ${JSON.stringify(join(tmpdir(), 'ledgerloop-bench-interval-check'))}, fsync: 'interval' }); console.log('ok') }
    catch (e) { console.log("JsonlStore refuses fsync 'interval' (" + String(e && e.message || e).split('\\n')[0] + ')') }
  }, (e) => console.log('import failed: ' + String(e && e.message || e).split('\\n')[0]))`
  const out = spawnSync(node, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 60_000 })
  const line = (out.stdout ?? '').trim().split('\n').pop() ?? ''
  return line === 'ok' ? undefined : line || `check exited ${out.status}`
}

export function unavailableReasons(
  configs: readonly BenchConfig[],
  benchDir: string,
  nodeBinary: Record<Runtime, string>,
): Map<string, string> {
  const reasons = new Map<string, string>()
  const dist = resolve(benchDir, '..', 'dist')
  const cache = new Map<string, string | undefined>()
  const once = (key: string, f: () => string | undefined) => {
    if (!cache.has(key)) cache.set(key, f())
    return cache.get(key)
  }
  for (const config of configs) {
    if (config.runtime === 'node22' && !existsSync(nodeBinary.node22)) {
      reasons.set(config.id, `Node 22 binary missing (${nodeBinary.node22}): run \`npm ci\` in bench/ (its postinstall installs bench/node22)`)
      continue
    }
    if (config.id.startsWith('dsh') && !existsSync(join(benchDir, 'node22/node_modules/@deepseek-ai/dsh-agent-loop'))) {
      reasons.set(config.id, 'dsh packages not installed in bench/node22: run `npm ci` in bench/node22')
      continue
    }
    if (config.group === 'ledgerloop' || config.group === 'scaling' || config.id.startsWith('ledgerloop')) {
      const indexFile = join(dist, 'index.js')
      const why = existsSync(indexFile)
        ? once(`index-${config.runtime}`, () => exportsNames(nodeBinary[config.runtime], indexFile, ['createHarness', 'scriptedAdapter', 'defineTool', 'MemoryStore', 'JsonlStore']))
        : 'dist/index.js missing'
      if (why) {
        reasons.set(config.id, `not built yet (${why}); run \`npm run build\` in the main package once the loop lands`)
        continue
      }
      if (config.variant.split('+').includes('interval')) {
        const whyNot = once(`interval-${config.runtime}`, () => intervalRefused(nodeBinary[config.runtime], indexFile))
        if (whyNot) {
          reasons.set(config.id, `not available: ${whyNot}`)
          continue
        }
      }
      if (config.variant === 'sqlite' || config.variant.startsWith('sqlite:')) {
        const sqliteFile = join(dist, 'store', 'sqlite.js')
        const whySqlite = existsSync(sqliteFile)
          ? once('sqlite', () => exportsNames(nodeBinary[config.runtime], sqliteFile, ['SqliteStore']))
          : 'dist/store/sqlite.js missing'
        if (whySqlite) reasons.set(config.id, `SQLite store not built yet (${whySqlite})`)
      }
    }
  }
  return reasons
}
