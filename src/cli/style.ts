/** Terminal styling: ANSI codes only when the stream is a terminal and `NO_COLOR` is unset (no-color.org). */
export interface Style {
  /** Whether this stream is a terminal (spinners and in-place redraws need one). */
  readonly tty: boolean
  /** Whether ANSI colour codes are written. */
  readonly color: boolean
  dim(text: string): string
  bold(text: string): string
  red(text: string): string
  green(text: string): string
  yellow(text: string): string
  cyan(text: string): string
}

/** The style for a stream, honouring `NO_COLOR` (any non-empty value turns colour off). */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Style {
  const tty = stream.isTTY === true
  const color = tty && (env.NO_COLOR === undefined || env.NO_COLOR === '')
  const wrap = (open: number, close: number) => (text: string): string => (color ? `\x1b[${open}m${text}\x1b[${close}m` : text)
  return {
    tty,
    color,
    dim: wrap(2, 22),
    bold: wrap(1, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  }
}
