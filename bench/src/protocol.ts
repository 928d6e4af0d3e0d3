// What a child process prints back to the runner: one line, this prefix, JSON.
import type { WorkloadCounts } from './workload.ts'

export const RESULT_PREFIX = '@@bench-result '

export type ChildResult =
  | {
      ok: true
      node: string
      counts: WorkloadCounts
      /** Wall time of the measured turn, prompt to idle. */
      wallMs: number
      /** process.resourceUsage().maxRSS: peak resident set of the whole process. */
      maxRssKiB: number
      /** Highest V8 used-heap size sampled at each model call and at the end. */
      peakHeapBytes: number
      notes: Record<string, number>
    }
  | { ok: false; stage: string; error: string }
