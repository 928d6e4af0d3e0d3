// The package.json that goes into the tarball, without the `prepare` script. `prepare` builds dist/ after a
// contributor's `npm ci`; in an installed package it has nothing to build, and npm lists it as an install
// script to approve (`npm warn install-scripts … ledgerloop (prepare: npm run build)`). `npm pack` and
// `npm publish` run `prepack` (strip) before they read the files and `postpack` (restore) after.
//
//   node scripts/pack-manifest.mjs strip|restore
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const manifest = join(root, 'package.json')
// The original, byte for byte, while a pack is under way (a pack that failed half-way leaves it behind:
// the next strip restores it first, so the stripped file is never taken for the original).
const saved = join(root, '.package.json.prepack')

function restore() {
  if (existsSync(saved)) renameSync(saved, manifest)
}

const command = process.argv[2]
if (command === 'strip') {
  restore()
  const text = readFileSync(manifest, 'utf8')
  const pkg = JSON.parse(text)
  writeFileSync(saved, text)
  delete pkg.scripts?.prepare
  // Renamed into place, so whoever reads package.json meanwhile (a test, an editor) sees a whole file.
  const stripped = `${manifest}.stripped`
  writeFileSync(stripped, `${JSON.stringify(pkg, null, 2)}\n`)
  renameSync(stripped, manifest)
} else if (command === 'restore') {
  restore()
} else {
  console.error('usage: node scripts/pack-manifest.mjs strip|restore')
  process.exitCode = 2
}
