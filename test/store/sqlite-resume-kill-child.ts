// The process the SQLite resume-checkpoint test kills: records `<turns>` turns into `<path>` and SIGKILLs itself
// as soon as the last one is idle (its turn end committed), before the store is closed.
//
//   sqlite-resume-kill-child <path> <turns>
import { recordSqlite } from './resume-recorder.js'

const [path, turnsText] = process.argv.slice(2) as [string, string]
const turns = Number(turnsText)
await recordSqlite(path, Array.from({ length: turns }, (_, i) => ({ text: 6, reasoning: 1, tool: i % 2 === 0, steer: i === 1 })), false, (turn) => {
  if (turn === turns - 1) process.kill(process.pid, 'SIGKILL')
})
