import { createHarness, defineTool, scriptChunks } from '/work/main/dist/index.js'
const toolStep = scriptChunks({ text: Array.from({ length: 20 }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: 'end' })
const noop = defineTool({ name: 'noop', description: 'x', parameters: { type: 'object' }, execute: () => 'ok' })
async function once(steps: number) {
  let calls = 0
  const m = { provider: 'bench', async *stream() { const n = ++calls; for (const c of n < steps ? toolStep : lastStep) yield c } }
  const h = createHarness({ adapters: [m], tools: [noop] })
  const a = await h.createAgent({ provider: 'bench', model: 'b' })
  a.followup('go'); await a.whenIdle(); await h.close()
}
for (let i = 0; i < 3; i++) await once(1000)
const t0 = performance.now()
for (let i = 0; i < 10; i++) await once(3000)
console.log('per step', ((performance.now() - t0) / 30000).toFixed(4))
