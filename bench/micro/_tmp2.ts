import { createHarness, defineTool, scriptChunks } from '../../dist/index.js'
const K = 20
const toolStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: 'end' })
async function once(steps: number) {
  let calls = 0
  const m = { provider: 'bench', async *stream() { const n = ++calls; for (const c of n < steps ? toolStep : lastStep) yield c.type === 'tool-call-delta' ? { ...c, id: `c${n}` } : c.type === 'block-end' && c.block.type === 'tool-call' ? { ...c, block: { ...c.block, id: `c${n}` } } : c } }
  const noop = defineTool({ name: 'noop', description: 'x', parameters: { type: 'object' }, execute: () => 'ok' })
  const h = createHarness({ adapters: [m], tools: [noop] })
  const a = await h.createAgent({ provider: 'bench', model: 'b' })
  const t0 = performance.now(); a.followup('go'); await a.whenIdle(); const t = performance.now() - t0
  await h.close(); return t / steps
}
for (let i = 0; i < 5; i++) console.log((await once(1000)).toFixed(4))
