import type { LedgerHooks } from '../loop/hook-types.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { ToolDefinition } from '../tools/types.js'
import type { EffectiveConfig } from './config.js'
import { startConfiguredMcpServers } from './mcp-config.js'
import { cliTelemetry, otlpEndpoint } from './telemetry-setup.js'

/** What a CLI harness gets beyond the built-ins: MCP servers' tools and span export, and how to stop them. */
export interface HarnessExtensions {
  readonly tools: readonly ToolDefinition[]
  readonly plugins: readonly Plugin<HookRegistrar<LedgerHooks>>[]
  /** Sends the last spans and stops the MCP servers. */
  close(): Promise<void>
}

/**
 * Starts the config file's `mcpServers` and, with `--otlp URL` or `OTEL_EXPORTER_OTLP_ENDPOINT`, live span
 * export over OTLP/HTTP.
 */
export async function startHarnessExtensions(config: EffectiveConfig, flags: { readonly otlp?: string }, env: NodeJS.ProcessEnv = process.env): Promise<HarnessExtensions> {
  const url = otlpEndpoint(flags.otlp, env)
  const telemetry = url !== undefined ? cliTelemetry(url, env) : undefined
  const mcp = await startConfiguredMcpServers(config.mcpServers, config.root, env)
  return {
    tools: mcp.tools,
    plugins: telemetry !== undefined ? [telemetry.plugin] : [],
    async close() {
      await Promise.allSettled([telemetry?.shutdown(), mcp.close()])
    },
  }
}
