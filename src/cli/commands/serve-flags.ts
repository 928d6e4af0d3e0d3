import type { AgentFlags } from './agent-options.js'

/** Flags of `ledgerloop serve`. */
export interface ServeFlags extends AgentFlags {
  readonly host: string
  readonly port: number
  readonly token?: string
  readonly unsafeNoToken?: boolean
  readonly allowOrigin?: string[]
  readonly store?: string
}
