import { randomUUID } from 'node:crypto'
import { closeSync, constants, existsSync, fstatSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs'
import { readRange } from './read-range.js'
import { join } from 'node:path'
import type { ContentWitness } from '../content-witness.js'
import { FileLock } from '../file-lock.js'
import { ensurePrivateDir } from '../file-permissions.js'
import { matchesSearch, newestFirst, sessionList } from '../session-list.js'
import type { SessionList, SessionListOptions, SessionSummary } from '../types.js'

/** The index's folder inside the sessions folder (a dot folder: never mistaken for a session). */
export const INDEX_DIR = '.index'
/** The index journal inside {@link INDEX_DIR}. */
export const INDEX_FILE = 'sessions.jsonl'
/** A journal tail past this many bytes is folded into the snapshot by the next listing. */
export const COMPACT_AT_BYTES = 1 << 20
const CHUNK = 64 * 1024
/** A listing stats at most this many of its rows' logs (fresh sizes, stale entries); the rest come as indexed. */
export const STAT_ROWS = 200
const TAG = 'session-index'
/**
 * The index format this build writes. 2: entries carry the quarantine state (`status`, `quarantineReason`).
 * An index of version 1 is read for its witnesses only: a listing rebuilds it from the logs.
 */
const INDEX_VERSION = 2

/** Line 1 of the index: how long the sorted snapshot after it is, and what it covers. */
interface IndexHeader {
  readonly ledgerloop: typeof TAG
  readonly version: 1 | typeof INDEX_VERSION
  /** Bytes of the snapshot (entry lines sorted oldest first) right after this line. */
  readonly snapshotBytes: number
  /** Sessions in the snapshot. */
  readonly count: number
  /** The sessions folder's mtime (ms) when the snapshot was checked complete against it. */
  readonly mark: number
}

/** A stored line: a summary (with `new: 1` when its session was just created), or a mark of the folder's mtime. */
type Line = { readonly kind: 'entry'; readonly entry: SessionSummary; readonly created: boolean } | { readonly kind: 'mark'; readonly mark: number }

/**
 * A session's entry as the index stores it: its summary and, from its writer, a witness of the bytes it had
 * committed (see {@link ContentWitness}). Listings hand out the summary without the witness.
 */
export interface IndexEntry extends SessionSummary {
  /** The digest of the committed bytes, when a writer recorded one (never when the entry was read from the file). */
  readonly content?: ContentWitness
}

/** Summarises one session from its file; undefined when the file is gone. */
export type SummarizeFile = (id: string) => SessionSummary | undefined

/**
 * The session index of a JSONL folder: `<dir>/.index/sessions.jsonl`, so listing the newest sessions never
 * opens every log.
 *
 * Format: a header line, a snapshot of one summary line per session sorted oldest first, then a journal of
 * summary lines appended by writers (at create, at every turn end, at close) with O_APPEND, one write each, so
 * writers of different sessions in different processes never lose each other's lines and need no lock. A
 * listing reads the header, the journal tail and the snapshot backwards, only as far as its page needs.
 * A listing folds a long journal into a new snapshot (written under a temporary name and renamed, under the
 * index's lock); a writer whose append landed in the replaced file (its link count is 0) appends again.
 *
 * Completeness: writers also append a *mark*, the folder's mtime after they created, locked or unlocked a
 * file. When the folder's mtime is newer than the last mark, something the index did not see happened (a
 * file copied in or deleted by hand, a crash between creating a log and indexing it), and the listing
 * reconciles the index with the folder (one `readdir`; only unknown logs are read) and says so. A listed
 * session whose log is newer than its entry (a crash mid-turn) is summarised again from its log.
 */
export class SessionIndex {
  /** The index journal's path. */
  readonly path: string
  readonly #sessionsDir: string
  readonly #indexDir: string
  readonly #summarize: SummarizeFile
  readonly #compactAt: number
  #fd: number | undefined

  /**
   * @param sessionsDir - the JSONL store's folder
   * @param summarize - summarises one session from its log (for rebuilding and for stale entries)
   * @param compactAtBytes - journal length past which a listing folds it into the snapshot
   */
  constructor(sessionsDir: string, summarize: SummarizeFile, compactAtBytes: number = COMPACT_AT_BYTES) {
    this.#compactAt = compactAtBytes
    this.#sessionsDir = sessionsDir
    this.#indexDir = join(sessionsDir, INDEX_DIR)
    this.path = join(this.#indexDir, INDEX_FILE)
    this.#summarize = summarize
  }

  /** Creates an empty index in a folder that holds no sessions yet (so the first listing needs no rebuild). */
  initialize(): void {
    try {
      if (existsSync(this.path)) return
      ensurePrivateDir(this.#indexDir)
      const mark = statSync(this.#sessionsDir).mtimeMs
      if (readdirSync(this.#sessionsDir).some(isLogName)) return // sessions without an index: the next listing rebuilds it
      this.#writeSnapshot([], mark)
    } catch {
      // The index is an accelerator: a listing rebuilds it when it is missing.
    }
  }

  /** Appends a session's entry (best effort: a failure only makes the next listing rebuild). */
  record(summary: IndexEntry, created = false): void {
    // A line written again after a fold goes without `new`: the fold most likely counted it already (a
    // count one short until the next fold beats one counted twice).
    this.#append(JSON.stringify(created ? { ...summary, new: 1 } : summary) + '\n', JSON.stringify(summary) + '\n')
  }

  /** Appends the folder's current mtime: everything this process did to the folder so far is indexed. */
  mark(): void {
    try {
      this.#append(JSON.stringify({ mark: statSync(this.#sessionsDir).mtimeMs }) + '\n')
    } catch {
      // best effort, as record()
    }
  }

  /** Closes the journal's file descriptor. */
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd)
    this.#fd = undefined
  }

  /** Lists sessions newest first through the index, rebuilding or reconciling it when it is missing or stale. */
  list(options: SessionListOptions = {}): SessionList {
    let fd: number
    try {
      fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      return this.#reconcile(options, 'missing')
    }
    let compact = false
    try {
      const size = fstatSync(fd).size
      const header = readHeader(fd, size)
      if (header === undefined) return this.#reconcile(options, 'damaged')
      if (header.version !== INDEX_VERSION) return this.#reconcile(options, 'outdated')
      const snapEnd = header.start + header.snapshotBytes
      if (snapEnd > size) return this.#reconcile(options, 'damaged')
      compact = size - snapEnd > this.#compactAt
      const tail = new Map<string, SessionSummary>()
      const created = new Set<string>()
      let mark = header.mark
      for (const line of parseLines(readRange(fd, snapEnd, size))) {
        if (line.kind === 'mark') mark = Math.max(mark, line.mark)
        else {
          mergeEntry(tail, line.entry)
          if (line.created) created.add(line.entry.id)
        }
      }
      if (statSync(this.#sessionsDir).mtimeMs > mark) return this.#reconcile(options, 'stale')
      const search = options.search ?? ''
      const offset = Math.max(0, options.offset ?? 0)
      const end = options.limit === undefined ? undefined : offset + Math.max(0, options.limit)
      // A search must see every entry; a plain page only the newest `end`.
      const need = search !== '' || end === undefined ? Infinity : end
      const candidates = [...tail.values()]
      readSnapshotBackwards(
        fd,
        header.start,
        snapEnd,
        (entry) => {
          if (tail.has(entry.id)) return true
          candidates.push(entry)
          return candidates.length - tail.size < need
        },
        searchPrefilter(search),
      )
      candidates.sort(newestFirst)
      const matched = search !== '' ? candidates.filter((s) => matchesSearch(s, search)) : candidates
      // Sessions created since the snapshot are journalled with `new`; a deleted one makes the folder stale.
      const total = search !== '' || end === undefined ? matched.length : header.count + created.size
      const page = this.#checkPage(matched.slice(offset, end))
      if (page === undefined) return this.#reconcile(options, 'stale')
      return sessionList(page, total)
    } finally {
      closeSync(fd)
      if (compact) this.#compact()
    }
  }

  /**
   * The latest entry of one session, or undefined when the index has none (or cannot be read). Reads the journal
   * and then the snapshot backwards, parsing only lines that name the id: about what a listing's first page costs.
   */
  find(id: string): IndexEntry | undefined {
    let fd: number
    try {
      fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      return undefined
    }
    try {
      const size = fstatSync(fd).size
      const header = readHeader(fd, size)
      if (header === undefined) return undefined
      const snapEnd = header.start + header.snapshotBytes
      if (snapEnd > size) return undefined
      const needle = `"id":${JSON.stringify(id)}`
      const names = (text: string): boolean => text.includes(needle)
      const found = new Map<string, SessionSummary>()
      for (const line of parseLines(readRange(fd, snapEnd, size), names)) if (line.kind === 'entry' && line.entry.id === id) mergeEntry(found, line.entry)
      if (!found.has(id)) {
        readSnapshotBackwards(fd, header.start, snapEnd, (entry) => {
          if (entry.id !== id) return true
          found.set(id, entry)
          return false
        }, names)
      }
      return found.get(id)
    } catch {
      return undefined // an accelerator and a witness, never a reason to fail a load
    } finally {
      closeSync(fd)
    }
  }

  /** Re-reads the folder and rewrites the index from it (reusing entries of logs that did not change). */
  rebuild(): SessionList {
    return this.#reconcile({}, 'missing', true)
  }

  // Stats each listed session's log: a log newer than its entry is summarised again; a missing one means the
  // folder changed under the index (undefined: reconcile).
  #checkPage(page: SessionSummary[], dropMissing = false): SessionSummary[] | undefined {
    const out: SessionSummary[] = []
    for (const [i, entry] of page.entries()) {
      if (i >= STAT_ROWS) {
        out.push(withoutWitness(entry))
        continue
      }
      let stats
      try {
        stats = statSync(join(this.#sessionsDir, `${entry.id}.jsonl`))
      } catch {
        if (dropMissing) continue
        return undefined
      }
      const stale = stats.mtimeMs > entry.updatedAt + 1
      if (stale || entry.problem !== undefined) {
        const fresh = this.#summarize(entry.id)
        if (fresh === undefined) continue
        out.push(fresh)
        // A crashed writer's session: remember what its log says now (a live writer indexes at its turn end).
        // Never when the log now holds less than the entry says was committed: the entry is the witness that
        // loading the log needs to refuse it (see judgeCommitted), and only `--reindex` accepts the loss. The
        // content witness is carried over as it was: a file edited by hand is stale too, and summarising it
        // must not vouch for the edit.
        const { content } = entry as IndexEntry
        if (stale && !shrunk(entry, fresh) && !existsSync(join(this.#sessionsDir, `${entry.id}.lock`))) this.record(content !== undefined && fresh.problem === undefined ? { ...fresh, content } : fresh)
      } else out.push(withoutWitness({ ...entry, sizeBytes: stats.size }))
    }
    return out.sort(newestFirst)
  }

  // One readdir: entries of logs that are gone are dropped, logs without an entry are summarised from their
  // file. The index is rewritten when anything changed, else only marked complete.
  // An outdated index (written by an older build: its entries lack fields this build lists) is rebuilt from
  // every log, keeping only its entries' content witnesses.
  #reconcile(options: SessionListOptions, why: 'missing' | 'damaged' | 'stale' | 'outdated', force = false): SessionList {
    ensurePrivateDir(this.#indexDir)
    const mark = statSync(this.#sessionsDir).mtimeMs
    let names: string[]
    try {
      names = readdirSync(this.#sessionsDir).filter(isLogName)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return sessionList([], 0)
      throw error
    }
    const known = why === 'stale' ? this.#readAll().entries : new Map<string, SessionSummary>()
    const witnesses = why === 'outdated' ? this.#readAll().entries : new Map<string, SessionSummary>()
    const entries = new Map<string, SessionSummary>()
    let added = 0
    const pending = new Set<string>()
    for (const name of names) {
      const id = name.slice(0, -'.jsonl'.length)
      const entry = known.get(id)
      if (entry !== undefined) entries.set(id, entry)
      else {
        const summary = this.#summarize(id)
        if (summary === undefined) continue
        entries.set(id, carryWitness(witnesses.get(id), summary))
        added++
        if (existsSync(join(this.#sessionsDir, `${id}.lock`))) pending.add(id)
      }
    }
    const gone = known.size - (entries.size - added)
    let note: string | undefined
    if (why !== 'stale' || added > 0 || gone > 0 || force) {
      const dropped = new Set([...known.keys()].filter((id) => !entries.has(id)))
      // A rebuild (`--reindex`) is how a person accepts what the files hold: no earlier witness survives it.
      const written = this.#writeSnapshot([...entries.values()], mark, true, dropped, pending, force)
      if (names.length > 0 || why === 'damaged') {
        const what =
          why === 'stale'
            ? `was stale (${added} session${added === 1 ? '' : 's'} not in it, ${gone} gone)`
            : why === 'outdated'
              ? 'was written by an older version'
              : `was ${why}`
        note = `the session index ${this.path} ${what}: ${written ? 'rebuilt' : 'read'} from ${names.length} session file${names.length === 1 ? '' : 's'}`
      }
    } else this.#append(JSON.stringify({ mark }) + '\n')
    const all = [...entries.values()].sort(newestFirst)
    const search = options.search ?? ''
    const matched = search !== '' ? all.filter((s) => matchesSearch(s, search)) : all
    const offset = Math.max(0, options.offset ?? 0)
    const end = options.limit === undefined ? undefined : offset + Math.max(0, options.limit)
    return sessionList(this.#checkPage(matched.slice(offset, end), true) ?? [], matched.length, note)
  }

  // Every entry of the index, the latest per session, and the latest mark (empty when it is unreadable).
  #readAll(): { entries: Map<string, SessionSummary>; mark: number | undefined } {
    const entries = new Map<string, SessionSummary>()
    let fd: number
    try {
      fd = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      return { entries, mark: undefined }
    }
    try {
      const size = fstatSync(fd).size
      const header = readHeader(fd, size)
      if (header === undefined) return { entries, mark: undefined }
      // An outdated index's marks vouch for entries this build would not trust: no verdict from it.
      let mark: number | undefined = header.version === INDEX_VERSION ? header.mark : undefined
      for (const line of parseLines(readRange(fd, header.start, size))) {
        if (line.kind === 'entry') mergeEntry(entries, line.entry)
        else if (mark !== undefined) mark = Math.max(mark, line.mark)
      }
      return { entries, mark }
    } finally {
      closeSync(fd)
    }
  }

  // Folds the journal into a new snapshot. Skipped when another process holds the index lock (it is doing it).
  #compact(): void {
    try {
      // The snapshot keeps the marks' verdict, never the folder's mtime of now: a change since the last mark
      // must still make the next listing reconcile.
      const { entries, mark } = this.#readAll()
      if (mark !== undefined) this.#writeSnapshot([...entries.values()], mark, false)
    } catch {
      // the next listing tries again
    }
  }

  // Writes header + sorted snapshot under a temporary name and renames it over the index, under the index
  // lock. Lines appended to the old file after it was read are copied over, so no writer's line is lost.
  // Returns false when another process holds the lock.
  // `pending`: sessions found without an entry whose writer holds their lock (it is creating them and will
  // journal them with `new`): in the snapshot, but not in its count until their `new` line comes.
  // `forget`: journal lines merged in lose their content witness (see #reconcile).
  #writeSnapshot(entries: SessionSummary[], mark: number, create = true, dropped: ReadonlySet<string> = new Set(), pending: Set<string> = new Set(), forget = false): boolean {
    if (!create && !existsSync(this.path)) return false
    ensurePrivateDir(this.#indexDir)
    let lock: FileLock
    try {
      lock = FileLock.acquire(join(this.#indexDir, 'lock'), 'session index')
    } catch {
      return false
    }
    let old: number | undefined
    try {
      try {
        old = openSync(this.path, constants.O_RDONLY | constants.O_NOFOLLOW)
      } catch {
        old = undefined
      }
      // Everything in the old file up to here is folded in (re-read under the lock, so nothing is missed).
      const readUpTo = old === undefined ? 0 : fstatSync(old).size
      if (old !== undefined) {
        const header = readHeader(old, readUpTo)
        const merged = new Map(entries.map((e) => [e.id, e]))
        const summarised = new Map(merged)
        // An outdated file's lines are not merged: the caller summarised every log afresh (only lines appended
        // after this read, by writers of this build, are copied over below).
        if (header !== undefined && header.version === INDEX_VERSION) {
          for (const line of parseLines(readRange(old, header.start + header.snapshotBytes, readUpTo))) {
            // Lines appended since the caller read the index count too, except for sessions whose log is gone.
            if (line.kind !== 'entry' || dropped.has(line.entry.id)) continue
            // A rebuild accepts what the files hold: a line claiming more than the log summarised now is the
            // witness it discards. Never decided by time alone: a file's mtime comes from the kernel's coarse
            // clock and can be older than a writer's Date.now() of a moment before the cut.
            const fresh = forget ? summarised.get(line.entry.id) : undefined
            if (fresh !== undefined && shrunk(line.entry, fresh)) continue
            mergeEntry(merged, forget ? withoutWitness(line.entry) : line.entry)
            if (line.created) pending.delete(line.entry.id)
          }
        }
        entries = [...merged.values()]
      }
      entries.sort((a, b) => newestFirst(b, a))
      const body = entries.map((e) => JSON.stringify(e) + '\n').join('')
      const header: IndexHeader = { ledgerloop: TAG, version: INDEX_VERSION, snapshotBytes: Buffer.byteLength(body), count: entries.length - pending.size, mark }
      const temporary = join(this.#indexDir, `.${randomUUID()}.tmp`)
      writeFileSync(temporary, JSON.stringify(header) + '\n' + body, { mode: 0o600, flag: 'wx' })
      try {
        renameSync(temporary, this.path)
      } catch (error) {
        unlinkSync(temporary)
        throw error
      }
      if (old !== undefined) {
        const late = readRange(old, readUpTo, fstatSync(old).size)
        if (late.length > 0) this.#append(late.toString('utf8'))
      }
      return true
    } finally {
      if (old !== undefined) closeSync(old)
      lock.release()
    }
  }

  // One O_APPEND write. A descriptor of a file that a fold replaced (link count 0) is reopened first; when the
  // file was replaced between that check and the write, the line may have missed the new file: it is written
  // again there as `again` (a duplicate line is harmless: the latest summary of a session wins).
  #append(text: string, again: string = text): void {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        if (this.#fd !== undefined && fstatSync(this.#fd).nlink === 0) this.close()
        this.#fd ??= openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW)
        writeSync(this.#fd, attempt === 0 ? text : again)
        if (fstatSync(this.#fd).nlink > 0) return
      } catch {
        // missing index (the next listing rebuilds it) or a failed write: give up quietly
        this.close()
        return
      }
      this.close()
    }
  }
}

// A listing's row: the summary without the index's witness (a store detail, not part of SessionSummary).
function withoutWitness(entry: IndexEntry): SessionSummary {
  if (entry.content === undefined) return entry
  const { content: _, ...summary } = entry
  return summary
}

// A summary read afresh from its log, with the content witness an outdated index held for it. A log that holds
// less than that entry says was committed keeps the old entry: it is the witness that makes loading refuse it.
function carryWitness(old: SessionSummary | undefined, fresh: SessionSummary): SessionSummary {
  const content = (old as IndexEntry | undefined)?.content
  if (old === undefined || content === undefined) return fresh
  if (shrunk(old, fresh)) return old
  if (fresh.problem !== undefined) return fresh
  const entry: IndexEntry = { ...fresh, content }
  return entry
}

// Whether a summary read from a log shows less than an entry recorded as committed (bytes or ended turns).
function shrunk(entry: SessionSummary, fresh: SessionSummary): boolean {
  if (entry.problem !== undefined || fresh.problem !== undefined) return false
  return (fresh.sizeBytes ?? 0) < (entry.sizeBytes ?? 0) || (fresh.turns ?? 0) < (entry.turns ?? 0)
}

function isLogName(name: string): boolean {
  return name.endsWith('.jsonl') && !name.startsWith('.')
}

// The later of two summaries of one session wins (ties: the one read last).
function mergeEntry(into: Map<string, SessionSummary>, entry: SessionSummary): void {
  const current = into.get(entry.id)
  if (current === undefined || entry.updatedAt >= current.updatedAt) into.set(entry.id, entry)
}


function readHeader(fd: number, size: number): (IndexHeader & { readonly start: number }) | undefined {
  const head = readRange(fd, 0, Math.min(size, 4096))
  const end = head.indexOf(10)
  if (end < 0) return undefined
  try {
    const value = JSON.parse(head.toString('utf8', 0, end)) as Partial<IndexHeader>
    if (value.ledgerloop !== TAG || (value.version !== 1 && value.version !== INDEX_VERSION)) return undefined
    if (!Number.isSafeInteger(value.snapshotBytes) || !Number.isSafeInteger(value.count) || typeof value.mark !== 'number') return undefined
    return { ...(value as IndexHeader), start: end + 1 }
  } catch {
    return undefined
  }
}

function parseLine(text: string): Line | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>
    if (typeof value.mark === 'number') return { kind: 'mark', mark: value.mark }
    if (typeof value.id !== 'string' || typeof value.updatedAt !== 'number' || typeof value.createdAt !== 'number') return undefined
    const created = value.new === 1
    delete value.new
    return { kind: 'entry', entry: value as unknown as SessionSummary, created }
  } catch {
    return undefined
  }
}

// Complete lines only: a last line without its newline is an append still being written (or torn). `keep`
// skips lines before they are parsed (a search's cheap first pass).
function* parseLines(bytes: Buffer, keep?: (text: string) => boolean): Generator<Line> {
  let start = 0
  for (let end = bytes.indexOf(10); end >= 0; start = end + 1, end = bytes.indexOf(10, start)) {
    const text = bytes.toString('utf8', start, end)
    if (keep !== undefined && !keep(text)) continue
    const line = parseLine(text)
    if (line !== undefined) yield line
  }
}

// A search can only match a line that contains its text: the title, first prompt and id are stored verbatim
// (JSON escapes only quotes, backslashes and control characters; a needle with one of those gets no first pass).
function searchPrefilter(search: string): ((text: string) => boolean) | undefined {
  if (search === '' || /["\\\u0000-\u001f]/.test(search)) return undefined
  const needle = search.toLowerCase()
  return (text) => text.toLowerCase().includes(needle)
}

// Reads snapshot entries newest first (the snapshot is sorted oldest first) until `take` returns false.
function readSnapshotBackwards(fd: number, start: number, end: number, take: (entry: SessionSummary) => boolean, keep?: (text: string) => boolean): void {
  let carry = Buffer.alloc(0)
  for (let pos = end; pos > start; ) {
    const from = Math.max(start, pos - CHUNK)
    let buffer = Buffer.concat([readRange(fd, from, pos), carry])
    pos = from
    if (from > start) {
      const first = buffer.indexOf(10)
      if (first < 0) {
        carry = buffer
        continue
      }
      carry = buffer.subarray(0, first + 1)
      buffer = buffer.subarray(first + 1)
    }
    const lines = [...parseLines(buffer, keep)]
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i] as Line
      if (line.kind === 'entry' && !take(line.entry)) return
    }
  }
}
