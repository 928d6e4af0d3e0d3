import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { compose, type Approvals, type Composition } from '../../src/app/compose.js'
import { resolveConfig } from '../../src/app/config.js'
import { scriptedAdapter } from '../../src/llm/adapters/scripted.js'
import { createCliHarness } from '../../src/cli/cli-harness.js'
import { configFlagsOf } from '../../src/cli/commands/agent-options.js'
import { MemoryStore } from '../../src/store/memory-store.js'

// One configuration, composed the way each entry point composes it (cli/cli-harness.ts for run and chat,
// cli/commands/serve.ts, cli/commands/worker.ts): the entry points differ only in who answers permission
// questions, never in what the agent has (issue 23, item 1).
describe('one composition for every entry point', () => {
  const home = mkdtempSync(join(tmpdir(), 'll-compose-'))
  const root = mkdtempSync(join(tmpdir(), 'll-compose-root-'))
  const config = resolveConfig({ root, reasoningEffort: 'high', maxOutputTokens: 1234, maxSteps: 7 }, { LEDGERLOOP_HOME: home }, root)
  const route = { provider: 'scripted', model: 'scripted', adapter: scriptedAdapter({ script: [] }) }
  const base = { config, route, root, sandbox: 'off' as const, network: false as const, instructions: 'Be brief.' }
  const entryPoints: Record<'run' | 'chat' | 'serve' | 'worker', Approvals> = {
    run: { kind: 'deny' },
    chat: { kind: 'ask', ask: async () => 'no' },
    serve: { kind: 'host', yes: false },
    worker: { kind: 'yes' },
  }
  const composed = Object.fromEntries(Object.entries(entryPoints).map(([name, approvals]) => [name, compose({ ...base, approvals })])) as Record<string, Composition>

  it('installs the same plugins, tools and request settings through run, chat, serve and worker', () => {
    const run = composed.run as Composition
    expect([...run.installed.plugins].sort()).toEqual(
      ['ledgerloop/compaction', 'ledgerloop/cost-budget', 'ledgerloop/permission', 'ledgerloop/request-settings', 'ledgerloop/retry', 'ledgerloop/turn-budget'].sort(),
    )
    expect(run.installed.tools).toContain('bash')
    expect(run.installed.requestSettings).toEqual({ reasoningEffort: 'high', maxTokens: 1234 })
    for (const [name, composition] of Object.entries(composed)) {
      expect([...composition.installed.plugins].sort(), name).toEqual([...run.installed.plugins].sort())
      expect(composition.installed.tools, name).toEqual(run.installed.tools)
      expect(composition.installed.requestSettings, name).toEqual(run.installed.requestSettings)
      expect(composition.options.system, name).toBe(run.options.system)
      expect(composition.options.tools?.map((t) => t.name), name).toEqual(composition.installed.tools)
    }
    expect(composed.serve?.hostPermissions).toEqual(config.permissions)
  })

  it("the CLI harness (run, chat) applies the request settings to every request it sends", async () => {
    const adapter = scriptedAdapter({ script: [{ text: 'ok' }] })
    const harness = createCliHarness({ config, route: { ...route, adapter }, root, store: new MemoryStore(), sandbox: 'off' })
    try {
      const agent = await harness.createAgent({ provider: 'scripted', model: 'scripted', cwd: root })
      agent.followup('hi')
      await agent.whenIdle()
      expect(adapter.requests[0]).toMatchObject({ reasoningEffort: 'high', maxTokens: 1234 })
    } finally {
      await harness.close()
    }
  })
})

// `--max-cost` reaches every entry point through the one flag table (cli/commands/agent-options.ts) and the one
// composition; the config file's `maxCostUsd` does the same without the flag (issue 26, item 5).
describe('the cost cap in the composition', () => {
  const home = mkdtempSync(join(tmpdir(), 'll-compose-cost-'))
  const root = mkdtempSync(join(tmpdir(), 'll-compose-cost-root-'))
  const route = { adapter: scriptedAdapter({ script: [] }) }
  const approvalsOf: Record<'run' | 'chat' | 'serve' | 'worker', Approvals> = {
    run: { kind: 'deny' },
    chat: { kind: 'ask', ask: async () => 'no' },
    serve: { kind: 'host', yes: false },
    worker: { kind: 'yes' },
  }

  it('installs the cost budget under run, chat, serve and worker, with --max-cost and without it (a session may carry its own cap)', () => {
    const capped = resolveConfig(configFlagsOf({ root, maxCost: 0.5 }), { LEDGERLOOP_HOME: home }, root)
    const uncapped = resolveConfig(configFlagsOf({ root }), { LEDGERLOOP_HOME: home }, root)
    expect(capped.maxCostUsd).toBe(0.5)
    for (const [name, approvals] of Object.entries(approvalsOf)) {
      expect(compose({ config: capped, route, root, sandbox: 'off', approvals }).installed.plugins, name).toContain('ledgerloop/cost-budget')
      expect(compose({ config: uncapped, route, root, sandbox: 'off', approvals }).installed.plugins, name).toContain('ledgerloop/cost-budget')
    }
  })

  it('takes the cap from the config file key maxCostUsd; the flag wins over it', () => {
    const fileHome = mkdtempSync(join(tmpdir(), 'll-compose-cost-file-'))
    writeFileSync(join(fileHome, 'config.json'), JSON.stringify({ maxCostUsd: 2 }))
    expect(resolveConfig(configFlagsOf({ root }), { LEDGERLOOP_HOME: fileHome }, root).maxCostUsd).toBe(2)
    expect(resolveConfig(configFlagsOf({ root, maxCost: 0.25 }), { LEDGERLOOP_HOME: fileHome }, root).maxCostUsd).toBe(0.25)
    writeFileSync(join(fileHome, 'config.json'), JSON.stringify({ maxCostUsd: -1 }))
    expect(() => resolveConfig(configFlagsOf({ root }), { LEDGERLOOP_HOME: fileHome }, root)).toThrow(/maxCostUsd/)
  })
})
