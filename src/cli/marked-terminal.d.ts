// The part of marked-terminal 7 that markdown.ts uses. The package ships no types, and the DefinitelyTyped ones
// describe version 6 (where `markedTerminal` returned a renderer, not a marked extension).
declare module 'marked-terminal' {
  import type { MarkedExtension } from 'marked'

  /** A marked extension whose renderer writes ANSI-styled terminal text. */
  export function markedTerminal(options?: Readonly<Record<string, unknown>>, highlightOptions?: Readonly<Record<string, unknown>>): MarkedExtension
}
