// The contract between the child process and a framework driver.
import type { Workload } from './workload.ts'

/** One prepared run: everything built, nothing sent yet. */
export interface PreparedRun {
  /** Send the prompt and resolve when the turn has fully finished. This is what is timed. */
  go(): Promise<void>
  /**
   * Optional, untimed, after the timed turn: settle background work (e.g. a
   * store's buffered tail) and return extra figures (e.g. events per step).
   */
  after?(): Promise<Record<string, number>> | Record<string, number>
}

export interface Driver {
  /** Build a fresh agent/session wired to `workload` (untimed). */
  prepare(workload: Workload): Promise<PreparedRun>
  close?(): Promise<void>
}

export interface DriverOptions {
  /** A private scratch directory on the benchmark disk (for durable stores). */
  readonly tmpDir: string
}

/** Every driver module exports this. */
export type CreateDriver = (variant: string, options: DriverOptions) => Promise<Driver>
