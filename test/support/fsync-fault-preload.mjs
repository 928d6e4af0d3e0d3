// Loaded with `node --import` into a CLI child process (test/cli/turn-end-write-failure.test.ts): a disk whose
// fsync fails from the turn-end flush on. Once a write hands the kernel a batch holding a `turn/end`, every
// later fsyncSync fails with EIO — what `strace -e inject=fsync:error=EIO:when=N+` does, aimed at the flush the
// turn depends on without counting syscalls (the timer flushes make that count vary) and without strace.
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'

const realWriteSync = fs.writeSync
const realFsyncSync = fs.fsyncSync
let failing = false

fs.writeSync = function writeSync(fd, data, ...rest) {
  if (typeof data === 'string' && data.includes('"type":"turn/end"')) failing = true
  return realWriteSync.call(this, fd, data, ...rest)
}

fs.fsyncSync = function fsyncSync(fd) {
  if (failing) {
    const error = new Error('EIO: i/o error, fsync (injected by test/support/fsync-fault-preload.mjs)')
    Object.assign(error, { code: 'EIO', errno: -5, syscall: 'fsync' })
    throw error
  }
  return realFsyncSync.call(this, fd)
}

// The JSONL store imports these as named bindings of node:fs: make them see the replacements.
syncBuiltinESMExports()
