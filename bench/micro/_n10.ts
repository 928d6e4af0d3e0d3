import { createHarness, defineTool, scriptChunks } from '/work/main/dist/index.js'
const K = 20
const toolStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: 'end' })
const noop = defineTool({ name: 'noop', description: 'x', parameters: { type: 'object' }, execute: () => 'ok' })
async function once(steps: number) {
  let calls = 0
  const m = { provider: 'bench', async *stream() { const n = ++calls; for (const c of n < steps ? toolStep : lastStep) yield c } }
  const h = createHarness({ adapters: [m], tools: [noop] })
  const a = await h.createAgent({ provider: 'bench', model: 'b' })
  const t0 = performance.now(); a.followup('go'); await a.whenIdle(); const t = performance.now() - t0
  await h.close(); return t
}
for (let i = 0; i < 300; i++) await once(10)
const ts = []; for (let i = 0; i < 200; i++) ts.push(await once(10))
ts.sort((a, b) => a - b); console.log('N=10 per turn ms median', ts[100].toFixed(3), 'per step', (ts[100] / 10).toFixed(4))
const t2 = []; for (let i = 0; i < 20; i++) t2.push(await once(1000))
t2.sort((a, b) => a - b); console.log('N=1000 per step', (t2[10] / 1000).toFixed(4))
