// The content index of a JSONL folder (`list({ grep })`): beside the session index, in `.index/content/`, one
// journal per session of its searchable texts (content-search.ts's rule) and one gram filter
// (content-grams.ts). Writers keep both as they commit: the texts of a committed batch and a cover mark (how many
// log bytes are indexed) go to the journal in one append; the filter is written at turn ends and at close. A
// search reads each session's filter and, where it may match, the journal; a journal that is missing, of
// another version, or that does not cover its log is rebuilt from the log (under the session's lock).
import { closeSync, constants, fstatSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { readRange } from './read-range.js'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import type { SessionEvent } from '../../session/events.js'
import { indexedTextOf, indexedTexts, matchInText, needleMatcher, type ContentMatch, type IndexedText } from '../content-search.js'
import { FileLock } from '../file-lock.js'
import { ensurePrivateDir } from '../file-permissions.js'
import { addGrams, GRAM_BITS, mayContain, needleGrams } from './content-grams.js'

/** The content index's folder inside the session index's folder. */
export const CONTENT_DIR = 'content'
/** The journal format this build writes; a journal of another version is rebuilt from its log. */
export const CONTENT_INDEX_VERSION = 1
const TAG = 'content-index'
/** Marks a gram filter file (and its version). */
const GRAMS_MAGIC = Buffer.from('LLGRAMS1')
const GRAMS_HEADER = GRAMS_MAGIC.length + 8
const CHUNK = 64 * 1024

/** What a search learned of one session's journal before reading its texts. */
interface JournalState {
  readonly fd: number
  readonly size: number
  /** Where the texts start (after the header line). */
  readonly textsFrom: number
  /** Journal bytes the gram filter covers, with its bits; absent when there is no usable filter. */
  readonly grams?: { readonly covered: number; readonly bits: Uint8Array }
}

/** The content index of one JSONL store's folder. */
export class ContentIndex {
  /** The index's folder (`<sessions>/.index/content`). */
  readonly dir: string
  readonly #sessionsDir: string

  /** @param sessionsDir - the JSONL store's folder; @param indexDir - its session index's folder */
  constructor(sessionsDir: string, indexDir: string) {
    this.#sessionsDir = sessionsDir
    this.dir = join(indexDir, CONTENT_DIR)
  }

  /**
   * Starts a session's journal afresh from `events` (a new session's seed, or a loaded log whose journal does
   * not cover it), covering the log's first `logBytes` bytes, and returns its writer. Best effort: undefined
   * when the index cannot be written (a search then rebuilds it).
   */
  start(id: string, events: Iterable<SessionEvent>, logBytes: number): ContentWriter | undefined {
    try {
      const texts = indexedTexts(events)
      const bits = this.#write(id, texts, logBytes)
      const fd = openSync(this.#journal(id), constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW)
      return new ContentWriter(this, id, fd, fstatSync(fd).size, bits)
    } catch {
      return undefined
    }
  }

  /**
   * The writer of a session opened for writing: its journal kept when it covers exactly the `logBytes` the
   * loaded log holds, else started again from `events` (the loaded log).
   */
  resume(id: string, events: Iterable<SessionEvent>, logBytes: number): ContentWriter | undefined {
    let fd: number | undefined
    try {
      fd = openSync(this.#journal(id), constants.O_RDWR | constants.O_APPEND | constants.O_NOFOLLOW)
      const state = this.#inspect(id, fd)
      if (state !== undefined && state.cover === logBytes && state.grams !== undefined) {
        const writer = new ContentWriter(this, id, fd, state.size, state.grams.bits, state.grams.covered)
        fd = undefined
        // Texts after the filter's last write (a crash between the two) join the filter now.
        writer.absorb(this.#texts(state.fdRead, state.grams.covered, state.size))
        return writer
      }
    } catch {
      // missing or unreadable: started again below
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
    return this.start(id, events, logBytes)
  }

  /**
   * The first match of `needle` in each session of `ids` (in their order), skipping through the gram filters
   * every session that cannot contain it.
   */
  search(ids: readonly string[], needle: string): Map<string, ContentMatch> {
    const grams = needleGrams(needle)
    const find = needleMatcher(needle)
    const out = new Map<string, ContentMatch>()
    for (const id of ids) {
      const match = this.#match(id, needle, grams, find)
      if (match !== undefined) out.set(id, match)
    }
    return out
  }

  /** Drops every journal and filter (`--reindex`): each is rebuilt from its log when next searched or opened. */
  clear(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }

  /** @internal Writes a session's gram filter (under a temporary name, renamed over the old one). */
  writeGrams(id: string, bits: Uint8Array, covered: number): void {
    const header = Buffer.alloc(GRAMS_HEADER)
    GRAMS_MAGIC.copy(header)
    header.writeDoubleLE(covered, GRAMS_MAGIC.length)
    const temporary = join(this.dir, `.${id}.${randomUUID()}.tmp`)
    writeFileSync(temporary, Buffer.concat([header, bits]), { mode: 0o600, flag: 'wx' })
    try {
      renameSync(temporary, this.#gramsPath(id))
    } catch (error) {
      unlinkSync(temporary)
      throw error
    }
  }

  #journal(id: string): string {
    return join(this.dir, `${id}.jsonl`)
  }

  #gramsPath(id: string): string {
    return join(this.dir, `${id}.grams`)
  }

  // Writes a journal (header, texts, cover mark) and its filter, each under a temporary name renamed into place.
  #write(id: string, texts: readonly IndexedText[], logBytes: number): Uint8Array {
    ensurePrivateDir(this.dir)
    const body = journalHeader(id) + texts.map(textLine).join('') + coverLine(logBytes)
    const temporary = join(this.dir, `.${id}.${randomUUID()}.tmp`)
    writeFileSync(temporary, body, { mode: 0o600, flag: 'wx' })
    try {
      renameSync(temporary, this.#journal(id))
    } catch (error) {
      unlinkSync(temporary)
      throw error
    }
    const bits = new Uint8Array(GRAM_BITS / 8)
    for (const t of texts) addGrams(bits, t.text)
    this.writeGrams(id, bits, Buffer.byteLength(body))
    return bits
  }

  // The journal's header check, its last cover mark and its filter; undefined when the journal is not this
  // build's journal of this session.
  #inspect(id: string, fd: number): (JournalState & { readonly cover: number | undefined; readonly fdRead: number }) | undefined {
    const size = fstatSync(fd).size
    const head = readRange(fd, 0, Math.min(size, 512))
    const headerEnd = head.indexOf(10)
    if (headerEnd < 0 || head.toString('utf8', 0, headerEnd + 1) !== journalHeader(id)) return undefined
    const tail = readRange(fd, Math.max(headerEnd + 1, size - 128), size)
    const cut = tail.lastIndexOf(10, tail.length - 2)
    let cover: number | undefined
    try {
      const last = JSON.parse(tail.toString('utf8', cut + 1)) as { upTo?: unknown }
      if (typeof last.upTo === 'number') cover = last.upTo
    } catch {
      cover = undefined // a torn last append: rebuilt
    }
    const grams = readGrams(this.#gramsPath(id), size)
    return { fd, fdRead: fd, size, textsFrom: headerEnd + 1, cover, ...(grams !== undefined ? { grams } : {}) }
  }

  #match(id: string, needle: string, grams: readonly [string, number][], find: (text: string, from?: number) => number): ContentMatch | undefined {
    let logSize: number
    try {
      logSize = statSync(join(this.#sessionsDir, `${id}.jsonl`)).size
    } catch {
      return undefined // gone since it was listed
    }
    let fd: number | undefined
    try {
      fd = openSync(this.#journal(id), constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      fd = undefined
    }
    try {
      const state = fd === undefined ? undefined : this.#inspect(id, fd)
      // A journal of this session that covers its log, or one a live writer is keeping (it indexes as it commits).
      if (state !== undefined && state.cover !== undefined && (state.cover === logSize || (state.cover < logSize && this.#locked(id)))) {
        const from = state.grams !== undefined && !mayContain(state.grams.bits, grams) ? state.grams.covered : state.textsFrom
        return firstIn(this.#texts(state.fd, from, state.size), needle, find)
      }
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
    return firstIn(this.#rebuild(id), needle, find)
  }

  // Rebuilds one session's journal from its log, under the session's lock (no writer appends meanwhile); when a
  // writer holds the lock, the texts are only read from the log for this search.
  #rebuild(id: string): IndexedText[] {
    let lock: FileLock | undefined
    try {
      lock = FileLock.acquire(join(this.#sessionsDir, `${id}.lock`), id)
    } catch {
      lock = undefined
    }
    try {
      let bytes: Buffer
      try {
        bytes = readNoFollow(join(this.#sessionsDir, `${id}.jsonl`))
      } catch {
        return []
      }
      const texts = textsOfLog(bytes)
      if (lock !== undefined) {
        try {
          this.#write(id, texts, bytes.length)
        } catch {
          // an accelerator: the next search tries again
        }
      }
      return texts
    } finally {
      lock?.release()
    }
  }

  #locked(id: string): boolean {
    try {
      statSync(join(this.#sessionsDir, `${id}.lock`))
      return true
    } catch {
      return false
    }
  }

  // The texts of journal bytes [from, to), complete lines only, read a chunk at a time (a search that finds its
  // match early reads no further).
  *#texts(fd: number, from: number, to: number): Generator<IndexedText> {
    let carry = ''
    for (let pos = from; pos < to; ) {
      const chunk = readRange(fd, pos, Math.min(to, pos + CHUNK))
      if (chunk.length === 0) return
      pos += chunk.length
      const text = carry + chunk.toString('utf8')
      const lines = text.split('\n')
      carry = lines.pop() ?? ''
      for (const line of lines) {
        const parsed = parseTextLine(line)
        if (parsed !== undefined) yield parsed
      }
    }
  }
}

/** A session's journal writer: appends the texts of every committed batch, keeps its gram filter. */
export class ContentWriter {
  readonly #index: ContentIndex
  readonly #id: string
  readonly #bits: Uint8Array
  #fd: number | undefined
  #size: number
  #gramsCovered: number

  /** @internal */
  constructor(index: ContentIndex, id: string, fd: number, size: number, bits: Uint8Array, gramsCovered = size) {
    this.#index = index
    this.#id = id
    this.#fd = fd
    this.#size = size
    this.#bits = bits
    this.#gramsCovered = gramsCovered
  }

  /** @internal Adds texts already in the journal to the filter. */
  absorb(texts: Iterable<IndexedText>): void {
    for (const t of texts) addGrams(this.#bits, t.text)
  }

  /**
   * A batch is in the log, which now holds `logBytes` bytes: its texts and the new cover mark are appended in
   * one write; at a turn end the filter is written too. Best effort: a failure stops this writer's indexing
   * (the journal then does not cover the log, and the next search or open rebuilds it).
   */
  committed(batch: readonly SessionEvent[], logBytes: number): void {
    if (this.#fd === undefined) return
    let lines = ''
    let turnEnd = false
    for (const event of batch) {
      const text = indexedTextOf(event)
      if (text !== undefined) {
        lines += textLine(text)
        addGrams(this.#bits, text.text)
      } else if (event.type === 'turn/end') turnEnd = true
    }
    lines += coverLine(logBytes)
    try {
      this.#size += writeSync(this.#fd, lines)
      if (turnEnd) this.#writeGrams()
    } catch {
      this.close()
    }
  }

  /** Writes the filter (when the journal grew since) and closes the journal. */
  close(): void {
    if (this.#fd === undefined) return
    try {
      this.#writeGrams()
    } catch {
      // the next search reads the journal's unfiltered tail
    }
    closeSync(this.#fd)
    this.#fd = undefined
  }

  #writeGrams(): void {
    if (this.#gramsCovered === this.#size) return
    this.#index.writeGrams(this.#id, this.#bits, this.#size)
    this.#gramsCovered = this.#size
  }
}

function journalHeader(id: string): string {
  return `${JSON.stringify({ ledgerloop: TAG, version: CONTENT_INDEX_VERSION, id })}\n`
}

function textLine(t: IndexedText): string {
  return `${JSON.stringify({ seq: t.seq, part: t.part, text: t.text })}\n`
}

function coverLine(logBytes: number): string {
  return `{"upTo":${logBytes}}\n`
}

function parseTextLine(line: string): IndexedText | undefined {
  if (!line.startsWith('{"seq":')) return undefined
  try {
    const value = JSON.parse(line) as IndexedText
    return typeof value.seq === 'number' && typeof value.text === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

function firstIn(texts: Iterable<IndexedText>, needle: string, find: (text: string, from?: number) => number): ContentMatch | undefined {
  for (const t of texts) {
    const match = matchInText(t, needle, find)
    if (match !== undefined) return match
  }
  return undefined
}

// A filter file that is this build's and covers no more than the journal holds; undefined otherwise.
function readGrams(path: string, journalSize: number): { covered: number; bits: Uint8Array } | undefined {
  let bytes: Buffer
  try {
    bytes = readNoFollow(path)
  } catch {
    return undefined
  }
  if (bytes.length !== GRAMS_HEADER + GRAM_BITS / 8 || !bytes.subarray(0, GRAMS_MAGIC.length).equals(GRAMS_MAGIC)) return undefined
  const covered = bytes.readDoubleLE(GRAMS_MAGIC.length)
  if (!Number.isSafeInteger(covered) || covered > journalSize) return undefined
  return { covered, bits: new Uint8Array(bytes.buffer, bytes.byteOffset + GRAMS_HEADER, GRAM_BITS / 8) }
}

const SEARCHABLE_PREFIXES = ['{"type":"user/message"', '{"type":"assistant/message"', '{"type":"tool/result"'].map((p) => Buffer.from(`\n${p}`))

/**
 * The searchable texts of a JSONL log, in log order, read without decoding it all: only lines that start with
 * one of the three searchable types (events are stored with `type` first) are parsed. Complete lines only.
 */
export function textsOfLog(bytes: Buffer): IndexedText[] {
  const starts: number[] = []
  for (const prefix of SEARCHABLE_PREFIXES) for (let at = bytes.indexOf(prefix); at >= 0; at = bytes.indexOf(prefix, at + 1)) starts.push(at + 1)
  starts.sort((a, b) => a - b)
  const out: IndexedText[] = []
  for (const start of starts) {
    const end = bytes.indexOf(10, start)
    if (end < 0) break
    try {
      const text = indexedTextOf(JSON.parse(bytes.toString('utf8', start, end)) as SessionEvent)
      if (text !== undefined) out.push(text)
    } catch {
      // a damaged line: loading the log reports it; the index goes without
    }
  }
  return out
}

// A whole file, never through a symbolic link.
function readNoFollow(path: string): Buffer {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    return readFileSync(fd)
  } finally {
    closeSync(fd)
  }
}

