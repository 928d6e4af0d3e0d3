import { pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { loopModel } from './loop-model.js'
const lib = (await import(pathToFileURL(join(process.argv[2] as string, 'index.js')).href)) as typeof import('../../src/index.js')
for (let i = 0; i < 60; i++) {
  const noop = lib.defineTool({ name: 'noop', description: 'd', parameters: { type: 'object' }, execute: () => 'ok' })
  const m = loopModel(lib, 1000)
  const h = lib.createHarness({ adapters: [m], tools: [noop] })
  const a = await h.createAgent({ provider: 'bench', model: 'b' })
  a.followup('go'); await a.whenIdle(); await h.close()
}
