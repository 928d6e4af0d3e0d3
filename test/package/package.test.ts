import { spawnSync, type SpawnSyncReturns } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt, REPO } from '../cli/cli-process.js'
import { writeConsumerProject } from './consumer-project.js'

// The package as a new user gets it: `npm pack`, installed into an empty project with no registry at hand,
// then used the way the README says. One pack and one install are shared by every case (they are the slow
// part). Offline for real: every npm run (pack, ci, npx) is offline, without the update check, and its proxies
// point at a closed loopback port, so a request that slipped through would fail rather than reach the registry.

const OPTIONAL_PEERS = ['@opentelemetry/api', 'pg', 'better-sqlite3', '@modelcontextprotocol/sdk']
const NO_NETWORK: NodeJS.ProcessEnv = {
  npm_config_offline: 'true',
  npm_config_update_notifier: 'false',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_proxy: 'http://127.0.0.1:9',
  npm_config_https_proxy: 'http://127.0.0.1:9',
}

let scratch = ''
let project = ''
let installed = ''
let installOutput = ''
let packageJsonBefore = ''

function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...env, NO_COLOR: '1', ...NO_NETWORK }, timeout: 180_000 })
}

function ok(result: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> {
  if (result.status !== 0) throw new Error(`${what} failed (${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}`)
  return result
}

/** A clean environment for the installed package: a fresh home, no provider keys, nothing of the caller's npm. */
function userEnv(): NodeJS.ProcessEnv {
  const home = join(scratch, 'home')
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LEDGERLOOP_HOME: home, NO_COLOR: '1', ...NO_NETWORK }
}

/** The README's "Embed it" snippet, verbatim. */
function readmeSnippet(): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8')
  const match = /Embed it:\s*\n```ts\n([\s\S]*?)\n```/.exec(readme)
  if (match?.[1] === undefined) throw new Error('README.md has no "Embed it:" ts block')
  return match[1]
}

/** The snippet with a scripted model in place of DeepSeek (`script`: the JSON of its script steps). */
function withScriptedModel(snippet: string, script: string): string {
  if (!snippet.includes('deepseekAdapter()')) throw new Error('the README snippet no longer builds deepseekAdapter(): update this test')
  return snippet
    .replace(/import \{ /, 'import { scriptedAdapter, ')
    .replace('deepseekAdapter()', `scriptedAdapter({ provider: 'deepseek', script: ${script} })`)
}

function runSnippet(name: string, script: string): SpawnSyncReturns<string> {
  const source = ts.transpileModule(withScriptedModel(readmeSnippet(), script), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText
  writeFileSync(join(project, `${name}.mjs`), source)
  return run(process.execPath, [`${name}.mjs`], project, userEnv())
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'll-package-'))
  project = join(scratch, 'project')
  ensureBuilt()
  packageJsonBefore = readFileSync(join(REPO, 'package.json'), 'utf8')
  ok(run('npm', ['pack', '--pack-destination', scratch, '--silent'], REPO), 'npm pack')
  const tarball = readdirSync(scratch).find((name) => name.endsWith('.tgz'))
  if (tarball === undefined) throw new Error('npm pack wrote no tarball')
  ok(run('mkdir', ['-p', project, join(scratch, 'home')], scratch), 'mkdir')
  ok(run('cp', [join(scratch, tarball), project], scratch), 'copy the tarball')
  writeConsumerProject(project, tarball, REPO)
  const install = ok(run('npm', ['ci', '--offline'], project), 'npm ci --offline')
  installOutput = `${install.stdout}${install.stderr}`
  installed = join(project, 'node_modules/ledgerloop')
}, 300_000)

afterAll(() => {
  if (scratch !== '') rmSync(scratch, { recursive: true, force: true })
})

describe('the packed package, installed offline into an empty project', () => {
  it('packs without touching package.json, and installs with no warning: no install script to approve, no EBADENGINE on Node 20', () => {
    expect(readFileSync(join(REPO, 'package.json'), 'utf8')).toBe(packageJsonBefore)
    expect(existsSync(join(REPO, '.package.json.prepack'))).toBe(false)
    expect(installOutput).not.toMatch(/npm warn|EBADENGINE|install-scripts/i)
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }
    expect(manifest.scripts?.prepare).toBeUndefined()
    for (const peer of OPTIONAL_PEERS) expect(existsSync(join(project, 'node_modules', peer)), peer).toBe(false)
  })

  it('ships source maps together with their sources', () => {
    const maps: string[] = []
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) walk(join(dir, entry.name))
        else if (entry.name.endsWith('.js.map')) maps.push(join(dir, entry.name))
      }
    }
    walk(join(installed, 'dist'))
    expect(maps.length).toBeGreaterThan(50)
    for (const file of maps) {
      const map = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] }
      expect(map.sourcesContent?.length, relative(installed, file)).toBe(map.sources.length)
      expect(map.sourcesContent?.every((content) => typeof content === 'string' && content.length > 0), relative(installed, file)).toBe(true)
    }
  })

  it("runs the README's embed snippet: the answer of a completed turn, the failure of a failed one", () => {
    const answered = runSnippet('embed-answer', JSON.stringify([{ text: ['It is an agent ', 'harness.'] }]))
    expect(answered.stderr).toBe('')
    expect(answered.stdout).toBe('It is an agent harness.\n')
    expect(answered.status).toBe(0)
    const failed = runSnippet('embed-failure', JSON.stringify([{ error: { code: 'AUTH', message: 'invalid key (scripted)', status: 401 } }]))
    expect(failed.stdout).toBe('')
    expect(failed.stderr).toContain('turn 1 ended error AUTH: invalid key (scripted)')
    expect(failed.status).toBe(1)
  })

  it('npx ledgerloop run --demo plays the shipped demo, and --help points at docs that are shipped', () => {
    const demo = run('npx', ['--offline', 'ledgerloop', 'run', '--demo'], project, userEnv())
    expect(demo.stderr).not.toMatch(/does not exist|Error/)
    expect(demo.stdout).toContain('[scripted]')
    expect(demo.stdout).toContain(join(installed, 'examples/scripts/demo.json'))
    expect(demo.stdout).toMatch(/completed · 4 steps/)
    expect(demo.status).toBe(0)
    const help = ok(run(join(project, 'node_modules/.bin/ledgerloop'), ['--help'], project, userEnv()), 'ledgerloop --help')
    const docs = /Docs: (\S+)\. /.exec(help.stdout)?.[1]
    expect(docs).toBe(join(installed, 'docs/cli.md'))
    expect(readFileSync(docs as string, 'utf8')).toMatch(/^# /)
    expect(help.stdout).toContain('ledgerloop run --demo')
  })

  it('compiles a TypeScript consumer of ledgerloop and ledgerloop/server with skipLibCheck: false and none of the optional peers installed', () => {
    const snippet = withScriptedModel(readmeSnippet(), "[{ text: 'typed' }]")
    const consumer = [
      snippet.replace(/import \{ /, 'import { telemetryPlugin, type SessionEvent, type TelemetryPluginOptions, '),
      '',
      // The server entry point needs none of the optional peers either (the SQLite and PostgreSQL ones do).
      "import { createLedgerServer } from 'ledgerloop/server'",
      'export const serve = createLedgerServer',
      "export const telemetry: TelemetryPluginOptions = { captureContent: false, tracerProvider: { getTracer: () => ({}) } }",
      'export const plugin = telemetryPlugin',
      'export function reasonOf(event: SessionEvent): string | undefined {',
      "  if (event.type === 'turn/end') return event.data.reason.kind",
      "  // @ts-expect-error a step end has no reason",
      "  if (event.type === 'step/end') return event.data.reason",
      '  return undefined',
      '}',
      '',
    ].join('\n')
    writeFileSync(join(project, 'consumer.ts'), consumer)
    const config = {
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        target: 'ES2022',
        lib: ['ES2023'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        // The consumer's own @types/node: this project's copy (a Node program has it; it is no peer of ours).
        typeRoots: [join(REPO, 'node_modules/@types')],
      },
      files: ['consumer.ts'],
    }
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(config, null, 2))
    const compiled = run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project)
    expect(`${compiled.stdout}${compiled.stderr}`).toBe('')
    expect(compiled.status).toBe(0)
  }, 120_000)
})
