// The first batch of a fresh process through the interceptor is a burst, not a standing queue
// (ADR 0614): Promise.all of 1 000 requests against a healthy 20 ms upstream, each batch in its
// own fresh child process, a few at once so that the machine is busy (a cold process on a busy
// machine dispatches such a batch in one synchronous turn that can last longer than two of the
// queue's intervals). Prints what it measured.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startUpstream } from './fixtures/http-upstream.mjs'
import { childJson } from './helpers.mjs'

const child = fileURLToPath(new URL('./fixtures/first-batch.mjs', import.meta.url))
const PROCESSES = 20
const AT_ONCE = 4
const BATCH = 1000

let up
before(async () => {
  up = await startUpstream()
})
after(() => up.close())

function firstBatch(how) {
  return childJson([child, how, up.url('/slow/20'), String(BATCH)], { timeout: 120_000 })
}

/** Runs PROCESSES fresh children, AT_ONCE at a time; resolves to their outcomes. */
async function fresh(how) {
  const out = []
  for (let i = 0; i < PROCESSES; i += AT_ONCE) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(AT_ONCE, PROCESSES - i) }, () => firstBatch(how)))))
  }
  return out
}

for (const how of ['fetch', 'request']) {
  test(`a fresh process's first batch of ${BATCH} through ${how}() is served whole, in ${PROCESSES} processes`, { timeout: 600_000 }, async () => {
    const runs = await fresh(how)
    const refused = runs.map((r) => r.refused)
    console.log(`${how}: refused per process ${refused.join(' ')}; ms ${runs.map((r) => r.ms).join(' ')}; dispatch turn ms ${runs.map((r) => r.turnMs).join(' ')}`)
    for (const r of runs) {
      assert.equal(r.served + r.refused, BATCH, `every call answered: ${JSON.stringify(r)}`)
      assert.equal(r.refused, 0, `refused: ${JSON.stringify(r)}`)
      assert.equal(r.served, BATCH, JSON.stringify(r))
    }
  })
}
