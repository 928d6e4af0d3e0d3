// Copies the web page of `serve` into dist/ with the browser libraries it imports, so the built package
// serves the page with no network and without those packages installed.
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const from = join(root, 'src/server/web')
const to = join(root, 'dist/server/web')
cpSync(from, to, { recursive: true })
mkdirSync(join(to, 'vendor'), { recursive: true })
const vendor = JSON.parse(readFileSync(join(from, 'vendor.json'), 'utf8'))
for (const [name, specifier] of Object.entries(vendor)) {
  const file = fileURLToPath(import.meta.resolve(specifier))
  cpSync(file, join(to, 'vendor', name))
  // Each library's licence travels with its copy.
  const pkg = specifier.split('/')[0]
  const licence = join(root, 'node_modules', pkg, 'LICENSE')
  if (existsSync(licence)) cpSync(licence, join(to, 'vendor', `${pkg}.LICENSE`))
}
