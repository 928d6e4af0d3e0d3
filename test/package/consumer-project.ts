import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// An empty project that depends on nothing but a packed ledgerloop tarball, installable with no registry.
//
// `npm install --offline <tarball>` needs the registry's metadata for every dependency, which `npm ci` (what CI
// and contributors run) never caches — only the tarballs. So the project gets a lockfile: the packed
// package's production dependencies exactly as this repository's package-lock.json resolved them (same
// versions, tarball URLs and integrity hashes, same folder layout), without the dev dependencies and without
// the optional peers. `npm ci --offline` then installs from the tarball and the npm cache alone.

interface LockEntry {
  readonly version?: string
  readonly resolved?: string
  readonly integrity?: string
  readonly dependencies?: Readonly<Record<string, string>>
  readonly optionalDependencies?: Readonly<Record<string, string>>
  readonly peerDependencies?: Readonly<Record<string, string>>
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>
  readonly [key: string]: unknown
}

interface Manifest {
  readonly name: string
  readonly version: string
  readonly dependencies?: Readonly<Record<string, string>>
  readonly [key: string]: unknown
}

/** The lock path a package `name` required from the package at `from` resolves to (Node's upward lookup). */
function resolveIn(packages: Readonly<Record<string, LockEntry>>, from: string, name: string): string | undefined {
  let base = from
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`
    if (packages[candidate] !== undefined) return candidate
    if (base === '') return undefined
    const cut = base.lastIndexOf('/node_modules/')
    base = cut < 0 ? '' : base.slice(0, cut)
  }
}

/** The lock entries a consumer of `manifest` needs: its runtime dependencies and theirs, with required peers. */
function productionClosure(packages: Readonly<Record<string, LockEntry>>, manifest: Manifest): Map<string, LockEntry> {
  const closure = new Map<string, LockEntry>()
  const visit = (from: string, names: Iterable<string>, optional: boolean): void => {
    for (const name of names) {
      const path = resolveIn(packages, from, name)
      if (path === undefined) {
        if (optional) continue
        throw new Error(`package-lock.json has no ${name} for ${from === '' ? 'the root' : from}`)
      }
      if (closure.has(path)) continue
      const entry = packages[path] as LockEntry
      closure.set(path, entry)
      visit(path, Object.keys(entry.dependencies ?? {}), false)
      visit(path, Object.keys(entry.optionalDependencies ?? {}), true)
      const peers = Object.keys(entry.peerDependencies ?? {}).filter((peer) => entry.peerDependenciesMeta?.[peer]?.optional !== true)
      visit(path, peers, false)
    }
  }
  visit('', Object.keys(manifest.dependencies ?? {}), false)
  return closure
}

/** The lockfile flags that describe the repository's own tree, not the consumer's. */
function consumerEntry(entry: LockEntry): LockEntry {
  const { dev: _dev, devOptional: _devOptional, peer: _peer, ...rest } = entry
  return rest
}

/**
 * Writes `package.json` and `package-lock.json` into `dir` (an empty folder holding `tarball`, a file name) for
 * a project whose only dependency is that packed ledgerloop; `repo` is this repository's root.
 */
export function writeConsumerProject(dir: string, tarball: string, repo: string): void {
  const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as Manifest
  const spec = `file:${tarball}`
  const integrity = `sha512-${createHash('sha512').update(readFileSync(join(dir, tarball))).digest('base64')}`
  const self = lock.packages[''] as LockEntry
  const packages: Record<string, LockEntry> = {
    '': { name: 'consumer', version: '1.0.0', dependencies: { ledgerloop: spec } },
    'node_modules/ledgerloop': {
      version: manifest.version,
      resolved: spec,
      integrity,
      license: self.license,
      dependencies: self.dependencies,
      bin: self.bin,
      engines: self.engines,
      peerDependencies: self.peerDependencies,
      peerDependenciesMeta: self.peerDependenciesMeta,
    },
  }
  for (const [path, entry] of productionClosure(lock.packages, manifest)) packages[path] = consumerEntry(entry)
  const project = { name: 'consumer', version: '1.0.0', private: true, type: 'module', dependencies: { ledgerloop: spec } }
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(project, null, 2)}\n`)
  writeFileSync(join(dir, 'package-lock.json'), `${JSON.stringify({ name: 'consumer', version: '1.0.0', lockfileVersion: 3, requires: true, packages }, null, 2)}\n`)
}
