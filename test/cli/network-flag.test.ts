import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { requireSystemTool } from '../support/system-tools.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

const sandbox = requireSystemTool('bubblewrap', import.meta.url)

beforeAll(() => ensureBuilt(), 120_000)

let server: Server | undefined
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

/** A loopback server on the host that counts connections: the only network the sandbox could reach here. */
async function hostServer(): Promise<{ port: number; connections: () => number }> {
  let connections = 0
  server = createServer((socket) => {
    connections++
    socket.on('error', () => undefined)
    socket.end('HELLO-FROM-HOST\n')
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return { port: address.port, connections: () => connections }
}

/** One scripted bash call that passes `network: true` and dials the host server. */
function networkScript(home: string, port: number): string {
  const file = join(home, 'net-script.json')
  const command = `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3 || echo OFFLINE`
  writeFileSync(file, JSON.stringify([{ toolCalls: [{ id: 'n1', name: 'bash', arguments: { command, network: true } }] }, { text: 'done' }]))
  return file
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 200))

describe('ledgerloop run --network-ask', () => {
  it.skipIf(sandbox.skip)('a call asking for the network gets it once approved (--yes); the footer says network: on request', async () => {
    const home = tempHome()
    const host = await hostServer()
    const run = await runCli(['run', '--yes', '--network-ask', '--script', networkScript(home, host.port), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('HELLO-FROM-HOST')
    expect(run.stdout).toMatch(/── completed · 2 steps · .* · network: on request\n/)
    expect(host.connections()).toBe(1)
  }, 30_000)

  it('a permission rule denying the network wins over --yes: the call is refused and nothing connects', async () => {
    const home = tempHome()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ permissions: { deny: ['network: *'] } }))
    const host = await hostServer()
    const run = await runCli(['run', '--yes', '--network-ask', '--script', networkScript(home, host.port), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/permission denied for network access for bash by rule 'network: \*'/)
    await settle()
    expect(host.connections()).toBe(0)
  }, 30_000)

  it('without the flag the argument does nothing: the command runs offline', async () => {
    const home = tempHome()
    const host = await hostServer()
    const run = await runCli(['run', '--yes', '--script', networkScript(home, host.port), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('OFFLINE')
    expect(run.stdout).not.toContain('network: on request')
    await settle()
    expect(host.connections()).toBe(0)
  }, 30_000)
})
