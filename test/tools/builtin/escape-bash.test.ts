import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chown, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { probeSandbox } from '../../../src/tools/builtin/sandbox.js'
import { requireSystemTool } from '../../support/system-tools.js'
import { ensureBuilt, REPO } from '../../cli/cli-process.js'
import { call, okText, tempDir, toolsFor, type CallResult } from './helpers.js'

// The escape suite for `bash` (issue 16): every attempt to reach outside the sandbox fails with a result the
// model can read, and the host is unchanged afterwards. Each attempt has a control that shows the thing
// attacked is really there, so a test cannot pass because it aimed at nothing.

// Directories the attacks aim at must be outside /tmp: the sandbox's /tmp is private, so a target under the
// host's /tmp would be out of sight anyway and prove nothing about the read-only host.
const HOST_SCRATCH = existsSync('/var/tmp') ? '/var/tmp' : os.homedir()
const scratch: string[] = []
async function hostDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(HOST_SCRATCH, prefix))
  scratch.push(dir)
  return dir
}

const restoreEnv: Array<() => void> = []
function setEnv(name: string, value: string): void {
  const before = process.env[name]
  process.env[name] = value
  restoreEnv.push(() => (before === undefined ? delete process.env[name] : (process.env[name] = before)))
}

afterEach(async () => {
  for (const restore of restoreEnv.splice(0).reverse()) restore()
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true })
})

// The suite is about the sandbox: without bubblewrap it skips, and says so at the end of the run; under CI=true
// it runs and fails loudly instead of passing vacuously.
const sandbox = requireSystemTool('bubblewrap', import.meta.url)

beforeAll(async () => {
  if (sandbox.skip) return
  expect(await probeSandbox()).toMatchObject({ ok: true })
})

/** The output of a call that ran (exit code zero or not). */
function ran(result: CallResult): string {
  if (result.kind !== 'ok') throw new Error(`expected the command to run, got ${JSON.stringify(result)}`)
  return result.text
}

/** Host pids of live processes whose command line contains `token`. */
function hostProcessesWith(token: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(token)) continue
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (!/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) found.push(Number(name))
    } catch {
      // exited while we looked
    }
  }
  return found
}

describe.skipIf(sandbox.skip)('bash escape suite (sandbox on, the default)', () => {
  it('cannot write, delete or create outside the workspace; the host files are unchanged', async () => {
    const root = await tempDir()
    const outside = await hostDir('ll-escape-')
    await writeFile(path.join(outside, 'marker.txt'), 'ORIGINAL\n')
    const before = await stat(path.join(outside, 'marker.txt'))
    const command = [
      `cat ${outside}/marker.txt`, // control: the host is visible (read-only)
      `echo pwned > ${outside}/marker.txt`,
      `echo new > ${outside}/new.txt`,
      `rm -f ${outside}/marker.txt`,
      `mkdir ${outside}/dir`,
      `touch /etc/ll-escape-${path.basename(outside)}`,
      'echo inside > ok.txt',
    ].join('; ')
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    expect(text).toContain('ORIGINAL')
    expect(text).toMatch(/Read-only file system/)
    expect(await readdir(outside)).toEqual(['marker.txt'])
    expect(await readFile(path.join(outside, 'marker.txt'), 'utf8')).toBe('ORIGINAL\n')
    expect((await stat(path.join(outside, 'marker.txt'))).mtimeMs).toBe(before.mtimeMs)
    expect(existsSync(`/etc/ll-escape-${path.basename(outside)}`)).toBe(false)
    // The workspace itself stays writable.
    expect(await readFile(path.join(root, 'ok.txt'), 'utf8')).toBe('inside\n')
  })

  it("writes to /tmp land in the sandbox's private /tmp, not the host's", async () => {
    const root = await tempDir()
    const name = `ll-escape-${process.pid}-${Date.now()}`
    const text = okText(await call(toolsFor(root, true).bash, { command: `echo x > /tmp/${name} && cat /tmp/${name} && ls /tmp | wc -l` }))
    expect(text.split('\n')[0]).toBe('x')
    expect(existsSync(path.join('/tmp', name))).toBe(false)
  })

  it('cannot read ~/.ssh or the ledgerloop home (they are hidden), while the rest of home is visible', async () => {
    const root = await tempDir()
    const home = await hostDir('ll-home-')
    await mkdir(path.join(home, '.ssh'))
    await writeFile(path.join(home, '.ssh', 'id_ed25519'), 'SSH-PRIVATE-KEY-SECRET\n')
    await writeFile(path.join(home, 'visible.txt'), 'PLAIN HOME FILE\n')
    const llHome = await hostDir('ll-llhome-')
    await writeFile(path.join(llHome, 'config.json'), '{"apiKey":"LEDGERLOOP-HOME-SECRET"}\n')
    await mkdir(path.join(home, '.ledgerloop'))
    await writeFile(path.join(home, '.ledgerloop', 'default-home.txt'), 'DEFAULT-HOME-SECRET\n')
    setEnv('HOME', home)
    setEnv('LEDGERLOOP_HOME', llHome)
    const command = `cat "$HOME/visible.txt"; ls -A "$HOME/.ssh"; cat "$HOME/.ssh/id_ed25519"; ls -A "$LEDGERLOOP_HOME"; cat "$LEDGERLOOP_HOME/config.json"; cat "$HOME/.ledgerloop/default-home.txt"`
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    expect(text).toContain('PLAIN HOME FILE')
    expect(text).not.toMatch(/SECRET/)
    expect(text).toMatch(/No such file or directory/)
    // The host still has them, untouched.
    expect(await readFile(path.join(home, '.ssh', 'id_ed25519'), 'utf8')).toBe('SSH-PRIVATE-KEY-SECRET\n')
  })

  describe('network', () => {
    let server: Server | undefined
    afterEach(async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
      server = undefined
    })

    async function listen(): Promise<{ port: number; connections: () => number }> {
      let connections = 0
      server = createServer((socket) => {
        connections++
        socket.on('error', () => undefined) // the client may reset; only the count matters
        socket.end('HELLO-FROM-HOST\n')
      })
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
      const address = server.address()
      if (address === null || typeof address === 'string') throw new Error('no port')
      return { port: address.port, connections: () => connections }
    }

    const attempt = (port: number) =>
      `exec 3<>/dev/tcp/127.0.0.1/${port} && echo CONNECTED && cat <&3; ` +
      `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => { console.log('NODE-CONNECTED'); process.exit(0) }).on('error', (e) => { console.log(e.code); process.exit(1) })"`

    it('is unreachable: a loopback server on the host sees no connection', async () => {
      const root = await tempDir()
      const host = await listen()
      const text = ran(await call(toolsFor(root, true).bash, { command: attempt(host.port) }))
      expect(text).not.toContain('CONNECTED')
      expect(text).not.toContain('HELLO-FROM-HOST')
      expect(text).toMatch(/ECONNREFUSED|Connection refused|Network is unreachable|ENETUNREACH/)
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(host.connections()).toBe(0)
    })

    it("per-call: only a call passing network: true reaches it; under the default policy the argument does nothing", async () => {
      const root = await tempDir()
      const host = await listen()
      const perCall = toolsFor(root, true, { network: 'per-call' }).bash
      const closed = ran(await call(perCall, { command: attempt(host.port) }))
      expect(closed).not.toContain('HELLO-FROM-HOST')
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(host.connections()).toBe(0)
      const sneaky = ran(await call(toolsFor(root, true).bash, { command: attempt(host.port), network: true }))
      expect(sneaky).not.toContain('HELLO-FROM-HOST')
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(host.connections()).toBe(0)
      const open = await call(perCall, { command: attempt(host.port), network: true })
      expect(ran(open)).toContain('HELLO-FROM-HOST')
      expect(host.connections()).toBeGreaterThan(0)
    })

    it('is reachable with network: true (the documented way to widen the sandbox)', async () => {
      const root = await tempDir()
      const host = await listen()
      const text = ran(await call(toolsFor(root, true, { network: true }).bash, { command: attempt(host.port) }))
      expect(text).toContain('HELLO-FROM-HOST')
      expect(host.connections()).toBeGreaterThan(0)
    })
  })

  it('a fork bomb stays under limits.maxProcesses, ends with TOOL_TIMEOUT, leaves nothing, and the next command runs', async () => {
    const root = await tempDir()
    const token = `bomb${process.pid}x${Date.now()}`
    const maxProcesses = 64
    const tools = toolsFor(root, true, { limits: { maxProcesses } })
    // Never set off a bomb where nothing would contain it: fail instead.
    const probe = await call(tools.bash, { command: 'true' })
    expect(probe.kind === 'ok' && (probe.output.meta as { processLimit?: string }).processLimit).toMatch(/^(cgroup|rlimit)$/)
    let peak = 0
    const sampler = setInterval(() => (peak = Math.max(peak, hostProcessesWith(token).length)), 50)
    const outcome = await call(tools.bash, { command: `${token}() { ${token} | ${token} & }; ${token}; wait`, timeoutMs: 4000 })
    clearInterval(sampler)
    // Either the forks were refused at the cap and the bomb fizzled, or the time limit ended it.
    const said = outcome.kind === 'ok' ? outcome.text : outcome.kind === 'error' ? `${outcome.code} ${outcome.message}` : ''
    expect(said).toMatch(/fork: (retry: )?Resource temporarily unavailable|^TOOL_TIMEOUT/)
    expect(peak).toBeGreaterThan(1) // the bomb did go off
    expect(peak).toBeLessThanOrEqual(maxProcesses)
    expect(hostProcessesWith(token)).toEqual([])
    // The per-command cgroups are gone too.
    const cgroups = existsSync('/sys/fs/cgroup/pids') ? readdirSync('/sys/fs/cgroup/pids') : []
    expect(cgroups.filter((name) => name.startsWith(`ledgerloop-${process.pid}-`))).toEqual([])
    expect(okText(await call(tools.bash, { command: 'echo still usable' }))).toBe('still usable\n\n[exit code 0]')
  }, 30_000)

  it('leaves no background process behind, also ones that start their own session (setsid, nohup, disown)', async () => {
    const root = await tempDir()
    const token = `31.${process.pid}${Date.now() % 100000}`
    const command = `nohup sleep ${token} >/dev/null 2>&1 & disown; setsid sleep ${token} >/dev/null 2>&1 < /dev/null & (setsid sleep ${token} >/dev/null 2>&1 &); echo started`
    const text = okText(await call(toolsFor(root, true).bash, { command }))
    expect(text).toContain('started')
    expect(text).toContain('background processes still running when the command exited were stopped')
    expect(hostProcessesWith(token)).toEqual([])
  })

  it('reports which sandbox ran the command and how processes were capped', async () => {
    const root = await tempDir()
    const result = await call(toolsFor(root, true).bash, { command: 'true' })
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ sandbox: 'bwrap', processLimit: expect.stringMatching(/^(cgroup|rlimit|none)$/) })
  })
})

// Issue 22: the escapes a process with capabilities would try. Run by root, bwrap used to hand the command
// every capability (CapEff 000001fffeffffff), and each attempt below then succeeded. CI runs as root, so
// there these tests always run; elsewhere they are skipped with the reason printed.
const isRoot = process.getuid?.() === 0
if (!isRoot) console.warn('[escape-bash] skipped "as root" escapes: this process is not root (CI runs them as root)')

describe.runIf(isRoot && !sandbox.skip)('bash escape suite as root (root must not be able to undo the sandbox)', () => {
  it('as root: the command has no capabilities at all (CapEff 0, bounding set empty), and its workspace files are owned by root', async () => {
    // Control: this process really is root with capabilities, so CapEff 0 inside is the sandbox's doing.
    expect(/^CapEff:\s+([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]).not.toBe('0000000000000000')
    const root = await tempDir()
    const text = okText(await call(toolsFor(root, true).bash, { command: 'grep -E "^Cap(Eff|Prm|Bnd|Amb):" /proc/self/status; id -u; echo made > made.txt' }))
    expect(text).toMatch(/^CapEff:\s+0000000000000000$/m)
    expect(text).toMatch(/^CapPrm:\s+0000000000000000$/m)
    expect(text).toMatch(/^CapBnd:\s+0000000000000000$/m)
    expect(text).toMatch(/^CapAmb:\s+0000000000000000$/m)
    const made = await stat(path.join(root, 'made.txt'))
    expect([made.uid, made.gid]).toEqual([0, 0])
    expect(await readFile(path.join(root, 'made.txt'), 'utf8')).toBe('made\n')
  })

  it('as root: umount of a hidden path fails and the secret under it stays hidden', async () => {
    const root = await tempDir()
    const home = await hostDir('ll-roothome-')
    await mkdir(path.join(home, '.ssh'))
    await writeFile(path.join(home, '.ssh', 'id_ed25519'), 'ROOT-SSH-KEY-SECRET\n')
    await writeFile(path.join(home, '.netrc'), 'machine x password NETRC-SECRET\n')
    setEnv('HOME', home)
    const command = [
      'grep -c " $HOME/.ssh " /proc/self/mountinfo', // control: the mask is a mount umount could remove
      'umount "$HOME/.ssh"; echo "umount=$?"',
      'umount -l "$HOME/.ssh"; echo "lazy=$?"',
      'umount "$HOME/.netrc"; echo "file=$?"',
      'cat "$HOME/.ssh/id_ed25519" "$HOME/.netrc"',
      'echo ws > ws.txt',
    ].join('; ')
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    expect(text.split('\n')[0]).toBe('1')
    expect(text).toMatch(/umount=[1-9]/)
    expect(text).toMatch(/lazy=[1-9]/)
    expect(text).toMatch(/file=[1-9]/)
    expect(text).not.toMatch(/SECRET/)
    expect(await readFile(path.join(root, 'ws.txt'), 'utf8')).toBe('ws\n')
  })

  it('as root: mount -o remount,bind,rw / (or any new mount) fails, and a host file outside the workspace stays unwritten', async () => {
    const root = await tempDir()
    const outside = await hostDir('ll-rootescape-')
    await writeFile(path.join(outside, 'marker.txt'), 'ORIGINAL\n')
    const command = [
      'mount -o remount,bind,rw /; echo "remount-bind=$?"',
      'mount -o remount,rw /; echo "remount=$?"',
      `mount -o remount,bind,rw ${outside}; echo "remount-dir=$?"`,
      `mount --bind ${root} ${outside}; echo "bind=$?"`,
      'mount -t tmpfs none /mnt; echo "tmpfs=$?"',
      `echo pwned > ${outside}/marker.txt`,
      `echo new > ${outside}/new.txt`,
      'echo ws > ws.txt',
    ].join('; ')
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    for (const attempt of ['remount-bind', 'remount', 'remount-dir', 'bind', 'tmpfs']) expect(text).toMatch(new RegExp(`${attempt}=[1-9]`))
    expect(text).toMatch(/Read-only file system/)
    expect(await readdir(outside)).toEqual(['marker.txt'])
    expect(await readFile(path.join(outside, 'marker.txt'), 'utf8')).toBe('ORIGINAL\n')
    expect(await readFile(path.join(root, 'ws.txt'), 'utf8')).toBe('ws\n')
  })

  it('as root: writes to /proc/sys are refused (a namespaced and a global sysctl), reading them still works', async () => {
    const root = await tempDir()
    const swappiness = readFileSync('/proc/sys/vm/swappiness', 'utf8')
    // kernel.domainname belongs to the sandbox's own uts namespace, so changing it could not harm the host even
    // where the sandbox is broken; vm.swappiness is global and is only written with the value it already has.
    const command = [
      'cat /proc/sys/vm/swappiness', // control: /proc/sys is there and readable
      'echo ll-escape > /proc/sys/kernel/domainname; echo "domainname=$?"',
      'cat /proc/sys/vm/swappiness > /proc/sys/vm/swappiness; echo "swappiness=$?"',
      'cat /proc/sys/kernel/domainname',
    ].join('; ')
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    expect(text.split('\n')[0]).toBe(swappiness.trim())
    expect(text).toMatch(/domainname=[1-9]/)
    expect(text).toMatch(/swappiness=[1-9]/)
    expect(text).not.toMatch(/^ll-escape$/m)
    expect(text).toMatch(/Read-only file system|Permission denied/)
    expect(readFileSync('/proc/sys/vm/swappiness', 'utf8')).toBe(swappiness)
  })

  it('as root: unshare (new mount or user namespaces) gives back no capability and no writable host', async () => {
    const root = await tempDir()
    const outside = await hostDir('ll-rootunshare-')
    await writeFile(path.join(outside, 'marker.txt'), 'ORIGINAL\n')
    const write = `mount -o remount,bind,rw / ; mount -o remount,bind,rw ${outside} ; echo pwned > ${outside}/marker.txt && echo WROTE-HOST`
    const command = [
      `unshare -m sh -c '${write}'; echo "mountns=$?"`,
      `unshare -Urm sh -c 'grep CapEff /proc/self/status; ${write}'; echo "userns=$?"`,
      `unshare -U sh -c 'grep CapEff /proc/self/status'; echo "plain-userns=$?"`,
      'echo ws > ws.txt',
    ].join('; ')
    const text = ran(await call(toolsFor(root, true).bash, { command }))
    expect(text).not.toContain('WROTE-HOST')
    expect(text).toMatch(/mountns=[1-9]/)
    expect(text).toMatch(/userns=[1-9]/)
    expect(text).toMatch(/plain-userns=[1-9]/)
    // Whatever the kernel lets through, no namespace inside ever holds a capability.
    expect(text).not.toMatch(/^CapEff:\s+0*[1-9a-f]/m)
    expect(await readFile(path.join(outside, 'marker.txt'), 'utf8')).toBe('ORIGINAL\n')
    expect(await readFile(path.join(root, 'ws.txt'), 'utf8')).toBe('ws\n')
  })
})

// The same escapes by a user without privileges. Root drops to nobody (65534) around a node process that runs
// the built `bash` tool; a non-root test run uses itself. Where the machine cannot do either (no setpriv, or
// unprivileged user namespaces are switched off, so bwrap cannot start for that user) the test is skipped
// with the reason printed.
const NOBODY = 65534
const asNobody = isRoot ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] : []
function nonRootUnavailable(): string | undefined {
  if (isRoot && spawnSync('setpriv', ['--version']).status !== 0) return 'setpriv is not installed, so root cannot run a command as nobody'
  const bwrap = spawnSync(asNobody[0] ?? 'bwrap', [...asNobody.slice(1), ...(isRoot ? ['bwrap'] : []), '--unshare-user', '--ro-bind', '/', '/', 'true'], { encoding: 'utf8' })
  if (bwrap.status !== 0) return `bwrap cannot start for a non-root user here: ${(bwrap.stderr || bwrap.error?.message || '').trim()}`
  return undefined
}
const nonRootSkip = nonRootUnavailable()
if (nonRootSkip !== undefined) console.warn(`[escape-bash] skipped the non-root escapes: ${nonRootSkip}`)

// Runs one command through the built `bash` tool in a separate node process (as nobody when we are root)
// and returns what the tool returned.
const CHILD = `
const [entry, root, command] = process.argv.slice(-3)
const { builtinTools } = await import(entry)
const bash = builtinTools({ root, shell: true }).find((tool) => tool.name === 'bash')
const checked = bash.validate({ command })
try {
  const output = await bash.execute(checked.value, { signal: new AbortController().signal, callId: 'c1', agent: { id: 'a1' }, idempotencyKey: 'k1' })
  process.stdout.write(JSON.stringify({ content: output.content }))
} catch (error) {
  process.stdout.write(JSON.stringify({ error: error.code + ': ' + error.message }))
}
`
function bashAsNonRoot(root: string, command: string, home: string): string {
  const entry = new URL(`file://${path.join(REPO, 'dist/tools/builtin/index.js')}`).href
  const argv = [...asNobody, process.execPath, '--input-type=module', '-e', CHILD, '--', entry, root, command]
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home }
  const child = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', env, timeout: 30_000 })
  if (child.status !== 0) throw new Error(`the non-root run failed (${child.status}): ${child.stderr}`)
  const result = JSON.parse(child.stdout) as { content?: string; error?: string }
  if (result.content === undefined) throw new Error(`bash did not run as non-root: ${result.error}`)
  return result.content
}

describe.skipIf(nonRootSkip !== undefined)('bash escape suite as a non-root user', () => {
  beforeAll(() => ensureBuilt(), 120_000)

  it('as non-root: no capabilities, not even in a nested user namespace; mounts, umount, /proc/sys and host writes fail; workspace files belong to the user', async () => {
    const uid = isRoot ? NOBODY : (process.getuid?.() ?? -1)
    const home = await hostDir('ll-userhome-')
    await mkdir(path.join(home, '.ssh'))
    await writeFile(path.join(home, '.ssh', 'id_ed25519'), 'USER-SSH-KEY-SECRET\n')
    const outside = await hostDir('ll-userescape-')
    await writeFile(path.join(outside, 'marker.txt'), 'ORIGINAL\n')
    const root = await realpath(await hostDir('ll-userws-'))
    if (isRoot) for (const dir of [home, path.join(home, '.ssh'), path.join(home, '.ssh', 'id_ed25519'), outside, path.join(outside, 'marker.txt'), root]) await chown(dir, NOBODY, NOBODY)
    const write = `mount -o remount,bind,rw / ; echo pwned > ${outside}/marker.txt && echo WROTE-HOST`
    const command = [
      'grep -E "^CapEff:" /proc/self/status; id -u',
      `unshare -Ur sh -c 'grep CapEff /proc/self/status; mount -t tmpfs none /mnt && echo MOUNTED-TMPFS'; echo "userns=$?"`,
      `unshare -Urm sh -c '${write}'`,
      'umount "$HOME/.ssh"; echo "umount=$?"',
      'cat "$HOME/.ssh/id_ed25519"',
      `${write}; echo "remount=$?"`,
      'echo ll-escape > /proc/sys/kernel/domainname; echo "sysctl=$?"',
      'echo ws > ws.txt',
    ].join('; ')
    const text = bashAsNonRoot(root, command, home)
    expect(text).toMatch(new RegExp(`^${uid}$`, 'm')) // control: it really ran as that user
    expect(text).not.toMatch(/^CapEff:\s+0*[1-9a-f]/m)
    expect(text).toMatch(/^CapEff:\s+0000000000000000$/m)
    expect(text).toMatch(/userns=[1-9]/)
    expect(text).not.toContain('MOUNTED-TMPFS')
    expect(text).toMatch(/umount=[1-9]/)
    expect(text).toMatch(/remount=[1-9]/)
    expect(text).toMatch(/sysctl=[1-9]/)
    expect(text).not.toMatch(/SECRET|WROTE-HOST/)
    expect(await readFile(path.join(outside, 'marker.txt'), 'utf8')).toBe('ORIGINAL\n')
    const made = await stat(path.join(root, 'ws.txt'))
    expect([made.uid, made.gid]).toEqual([uid, isRoot ? NOBODY : process.getgid?.()])
    expect(await readFile(path.join(root, 'ws.txt'), 'utf8')).toBe('ws\n')
  }, 60_000)
})

describe('bash fails closed when bwrap cannot build the whole sandbox', () => {
  it.each(['--unshare-user', '--disable-userns', '--cap-drop'])('a bwrap that refuses %s is SANDBOX_UNAVAILABLE and runs nothing (never a weaker sandbox)', async (option) => {
    const root = await tempDir()
    const real = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim()
    expect(real).not.toBe('') // control: there is a real bwrap the fake could fall back to
    const bin = await tempDir('ll-partial-bwrap-')
    // Like a machine without unprivileged user namespaces, or a setuid bwrap: everything else works.
    const fake = `#!/bin/sh\nfor arg in "$@"; do [ "$arg" = "${option}" ] && { echo "bwrap: ${option}: Operation not permitted" >&2; exit 1; }; done\nexec ${real} "$@"\n`
    await writeFile(path.join(bin, 'bwrap'), fake, { mode: 0o755 })
    setEnv('PATH', `${bin}:${process.env.PATH ?? ''}`)
    const result = await call(toolsFor(root, true).bash, { command: 'touch ran' })
    expect(result).toMatchObject({ kind: 'error', code: 'SANDBOX_UNAVAILABLE' })
    expect(result.kind === 'error' && result.message).toContain(`${option}: Operation not permitted`)
    expect(await readdir(root)).toEqual([])
  })
})
