import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { checkBubblewrap, checkChromium, type SystemTool, type SystemToolsReport } from './system-tools.js'

/**
 * Vitest global setup: checks once per run whether bubblewrap and Chromium work, hands the result to the test
 * files, and at the end prints which suites skipped tests for want of one (the runner lists no skips itself).
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const [bubblewrap, chromium] = await Promise.all([checkBubblewrap(), checkChromium()])
  const skipNotes = mkdtempSync(join(tmpdir(), 'ledgerloop-skips-'))
  const report: SystemToolsReport = { tools: { bubblewrap, chromium }, skipNotes, strict: process.env.CI === 'true' }
  project.provide('systemTools', report)
  for (const [tool, check] of Object.entries(report.tools)) {
    if (!check.ok && report.strict) process.stderr.write(`[system tools] ${tool} does not work (${check.reason ?? '?'}); CI=true, so its suites run and will fail\n`)
  }
  return () => {
    const byTool = new Map<SystemTool, string[]>()
    for (const note of readdirSync(skipNotes)) {
      const [tool, file] = note.split('--') as [SystemTool, string]
      byTool.set(tool, [...(byTool.get(tool) ?? []), file])
    }
    rmSync(skipNotes, { recursive: true, force: true })
    for (const [tool, files] of byTool) {
      const why = report.tools[tool].reason ?? 'not working'
      process.stdout.write(`\n[system tools] skipped tests in ${files.length} suite${files.length === 1 ? '' : 's'} because ${tool} is missing or not working (${why}): ${files.sort().join(', ')}\n` +
        `[system tools] install it to run them: apt-get install ${tool} (Debian/Ubuntu); CI=true runs them regardless\n`)
    }
  }
}
