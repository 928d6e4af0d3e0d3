import { createHash } from 'node:crypto'
import type { ContentBlock } from '../../llm/types.js'
import type { ToolOutput } from '../../tools/types.js'
import type { McpCallResult } from './connection.js'

/**
 * Maps an MCP `tools/call` result to what the model reads: text stays text, images become image blocks (a
 * content address plus a `data:` URL), embedded text resources become text headed by their URI, and what a
 * model cannot read (audio, binary blobs) becomes a one-line note instead of silently vanishing. A result the
 * server marked `isError` is a tool error with code `MCP_TOOL_ERROR`. Structured content is shown as JSON only
 * when the server sent no content blocks (servers usually send both, the text being the same data).
 */
export function mcpResultToOutput(result: McpCallResult, server: string, tool: string): ToolOutput {
  const blocks: ContentBlock[] = []
  for (const item of Array.isArray(result.content) ? result.content : []) blocks.push(mcpBlock(item))
  if (blocks.length === 0 && result.structuredContent !== undefined) {
    blocks.push({ type: 'text', text: JSON.stringify(result.structuredContent) })
  }
  if (blocks.length === 0) blocks.push({ type: 'text', text: result.isError === true ? 'the tool failed without saying why' : '(no output)' })
  return {
    content: blocks,
    meta: { mcp: { server, tool } },
    ...(result.isError === true ? { isError: true, errorCode: 'MCP_TOOL_ERROR' } : {}),
  }
}

function mcpBlock(item: unknown): ContentBlock {
  const block = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>
  const text = (value: unknown): string => (typeof value === 'string' ? value : '')
  switch (block.type) {
    case 'text':
      return { type: 'text', text: text(block.text) }
    case 'image': {
      const data = text(block.data)
      const mediaType = text(block.mimeType) || 'application/octet-stream'
      const bytes = Buffer.from(data, 'base64')
      return {
        type: 'image',
        attachment: { attachmentId: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, mediaType, bytes: bytes.length, url: `data:${mediaType};base64,${data}` },
      }
    }
    case 'audio':
      return { type: 'text', text: `[audio ${text(block.mimeType) || 'of unknown type'}, ${Buffer.from(text(block.data), 'base64').length} bytes, not shown]` }
    case 'resource': {
      const resource = (typeof block.resource === 'object' && block.resource !== null ? block.resource : {}) as Record<string, unknown>
      const uri = text(resource.uri)
      if (typeof resource.text === 'string') return { type: 'text', text: `${uri}\n${resource.text}` }
      return { type: 'text', text: `[resource ${uri} (${text(resource.mimeType) || 'binary'}), not shown]` }
    }
    case 'resource_link':
      return { type: 'text', text: `[resource link ${text(block.name)}: ${text(block.uri)}]` }
    default:
      return { type: 'text', text: `[unsupported MCP content ${JSON.stringify(block.type ?? null)}]` }
  }
}
