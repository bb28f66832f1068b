// Issue 8: untrusted keys. 2 000 000 distinct keys in a row (as from URL hosts) while ten keys
// stay busy: at most maxKeys (1000) alive, no busy key evicted, memory flat once warm. Run in
// a child with --expose-gc so that heap and RSS are measured after full collections.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('./fixtures/key-flood.cjs', import.meta.url))
const MB = 1024 * 1024

test('untrusted keys: 2 000 000 distinct keys leave ≤ 1000 alive, never evict a busy key, memory flat', async (t) => {
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', script, '2000000', '200000'], { timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`))
      else resolve(stdout)
    })
  })
  const r = JSON.parse(out.trim().split('\n').at(-1))
  assert.equal(r.total, 2_000_000)
  assert.ok(r.maxAlive <= 1000 && r.alive <= 1000, `alive ${r.alive}, max ${r.maxAlive}`)
  assert.ok(r.maxCache <= 1000 && r.cache <= 1000, `JS key cache ${r.cache}, max ${r.maxCache}`)
  assert.equal(r.busyAlive, true, 'a busy key was evicted')
  assert.deepEqual(r.busyResults, Array.from({ length: 10 }, (_, i) => `busy-${i} done`))
  assert.deepEqual(r.busyAfter, Array(10).fill(0), 'busy keys settle into their own accounting')
  // Warm (after 200 000 keys) → end (2 000 000): 1.8 M more keys. A leak of even 10 bytes a key
  // would be 18 MB; measured growth is noise (heap shrinks slightly, RSS ±4 MB).
  assert.ok(r.heapGrowth < 1 * MB, `heapUsed grew ${(r.heapGrowth / MB).toFixed(2)} MB`)
  assert.ok(r.rssGrowth < 16 * MB, `rss grew ${(r.rssGrowth / MB).toFixed(2)} MB`)
  t.diagnostic(`key flood: ${r.total} keys in ${(r.ms / 1000).toFixed(1)} s; heap ${(r.heapGrowth / 1024).toFixed(0)} KiB, rss ${(r.rssGrowth / 1024).toFixed(0)} KiB after warm-up`)
})
