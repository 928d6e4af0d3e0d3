import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HarnessError } from '../errors/harness-error.js'

/** One file of the web page, held in memory. */
export interface PageFile {
  readonly body: Buffer
  readonly contentType: string
}

/** The page's files by URL path (`/` is index.html, the rest under `/assets/`), and the CSP that fits them. */
export interface PageFiles {
  readonly files: ReadonlyMap<string, PageFile>
  /** `Content-Security-Policy` for the page: own scripts plus the hash of its inline import map. */
  readonly contentSecurityPolicy: string
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
}

/** The folder of the page's own files: `server/web/` next to this module (in `src/` and in `dist/` alike). */
export function pageDirectory(): string {
  return fileURLToPath(new URL('./web/', import.meta.url))
}

/** The browser libraries the page imports, as `vendor/<file>` ← npm specifier (copied into the build). */
export function vendorFiles(dir: string = pageDirectory()): Record<string, string> {
  const list = join(dir, 'vendor.json')
  if (!existsSync(list)) throw new HarnessError(`the web page's files are missing from ${dir} (a build without its copy step: run npm run build)`, 'INVALID_CONFIG')
  return JSON.parse(readFileSync(list, 'utf8')) as Record<string, string>
}

/**
 * Loads every file of the page into memory once. Only these paths are ever served, so no request path can
 * reach anything outside the page's folder. Vendored libraries come from `web/vendor/` in a build and from
 * the installed npm packages when running from source.
 */
export function loadPageFiles(dir: string = pageDirectory()): PageFiles {
  const files = new Map<string, PageFile>()
  for (const path of walk(dir)) {
    const rel = relative(dir, path).split(sep).join('/')
    if (rel === 'vendor.json') continue
    const file = { body: readFileSync(path), contentType: CONTENT_TYPES[extname(path)] ?? 'application/octet-stream' }
    files.set(rel === 'index.html' ? '/' : `/assets/${rel}`, file)
  }
  for (const [name, specifier] of Object.entries(vendorFiles(dir))) {
    const key = `/assets/vendor/${name}`
    if (files.has(key)) continue
    files.set(key, { body: readFileSync(fileURLToPath(import.meta.resolve(specifier))), contentType: CONTENT_TYPES[extname(name)] ?? 'text/javascript; charset=utf-8' })
  }
  const index = files.get('/')?.body.toString('utf8') ?? ''
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(index)?.[1]
  const mapHash = importMap !== undefined ? ` 'sha256-${createHash('sha256').update(importMap).digest('base64')}'` : ''
  return {
    files,
    contentSecurityPolicy:
      `default-src 'none'; script-src 'self'${mapHash}; style-src 'self'; img-src 'self' data:; connect-src 'self'; ` +
      `base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  }
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return []
  const out: string[] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...walk(path))
    else out.push(path)
  }
  return out
}
