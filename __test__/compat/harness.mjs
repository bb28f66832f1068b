// The compatibility suite's harness: the same file runs under Node, Bun and Deno, whose test
// runners differ, so it prints plain TAP that scripts/test.mjs reads (the plan, one line per
// check, `# pass` and `# fail`). No skip and no todo: a check runs everywhere it is registered.
import process from 'node:process'

/** The runtime running this file. */
export const runtime = typeof globalThis.Bun !== 'undefined' ? 'bun' : typeof globalThis.Deno !== 'undefined' ? 'deno' : 'node'

const checks = []
/** Registers a check: an async function that throws on failure. */
export function check(name, fn) {
  checks.push({ name, fn })
}

// One check over this is a failure (the runner's budget would kill the whole runtime later).
const CHECK_TIMEOUT_MS = 20_000
// After the last check the process must exit by itself: resilix's timers never hold it.
const EXIT_GRACE_MS = 5_000

export async function run() {
  console.log('TAP version 13')
  console.log(`1..${checks.length}`)
  let pass = 0
  let fail = 0
  for (const [i, { name, fn }] of checks.entries()) {
    let timer
    const overdue = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no result after ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)
    })
    try {
      await Promise.race([fn(), overdue])
      pass++
      console.log(`ok ${i + 1} - ${name}`)
    } catch (e) {
      fail++
      console.log(`not ok ${i + 1} - ${name}`)
      const message = String(e?.message ?? e).split('\n').filter(Boolean).slice(0, 3).join(' ')
      console.log(`  ---\n  error: ${JSON.stringify(message)}\n  stack: ${JSON.stringify(String(e?.stack ?? '').slice(0, 600))}\n  ...`)
    } finally {
      clearTimeout(timer)
    }
  }
  console.log(`# pass ${pass}`)
  console.log(`# fail ${fail}`)
  process.exitCode = fail ? 1 : 0
  setTimeout(() => {
    console.log(`# the process was still alive ${EXIT_GRACE_MS} ms after the last check`)
    process.exit(1)
  }, EXIT_GRACE_MS).unref()
}
