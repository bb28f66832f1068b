// Every example in examples/ runs as a user would run it (`node examples/NAME.mjs`, against the
// local server it starts itself), ends by itself, and exits 0. They run side by side: each is a
// few seconds, mostly waiting.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const dir = fileURLToPath(new URL('../examples/', import.meta.url))
const examples = readdirSync(dir).filter((f) => f.endsWith('.mjs')).sort()

// What each one must print: proof that it did its job, not just that it exited.
const expected = {
  'fetch.mjs': /10 parallel calls ok[\s\S]*\/busy: HTTP 429[\s\S]*\/slow: timed out/,
  'undici-request.mjs': /60 calls at once:[\s\S]*verdicts/,
  'undici-interceptor.mjs':
    /10 parallel fetches ok[\s\S]*\/busy: HTTP 503[\s\S]*\/slow: timed out[\s\S]*while streaming: 1\n\/events: latency sample \d{3,} ms[\s\S]*slot freed after[\s\S]*refused by resilix \(limit\)[\s\S]*inflight 0/,
  'streaming-sse.mjs': /pattern 1: 4 streams[\s\S]*pattern 2: slot held/,
  'llm-service-metrics.mjs':
    /while calls wait for budget:\nresilix_retries_total[\s\S]*resilix_quota_spent\{key="[^"]+",budget="0",cost="requests"\} 4\n[\s\S]*resilix_quota_limit\{key="[^"]+",budget="1",cost="tokens"\} 2000\n[\s\S]*resilix_quota_waiting\{key="[^"]+"\} [1-4]\n[\s\S]*answers: [1-8] of 8 ok\nscrape after:[\s\S]*resilix_quota_waiting\{key="[^"]+"\} 0\n/,
  'many-hosts.mjs': /keys alive:[\s\S]*stats\(\) covers 3 keys/,
  'otel-metrics.mjs':
    /collection 1[\s\S]*resilix_call_limit\{resilix_key="payments.example"\} \d+[\s\S]*collection 2[\s\S]*resilix_call_duration_seconds\{resilix_key="payments.example",resilix_verdict="success"\} count \d+/,
  'prometheus-metrics.mjs':
    /resilix_call_duration_seconds_count\{key="catalog.example",verdict="answered"\} 4\n[\s\S]*resilix_call_duration_seconds_count\{key="catalog.example",verdict="failure"\} 3\n[\s\S]*resilix_breaker_state\{key="catalog.example",state="closed"\} 1/,
}

function run(file, limitMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(dir, file)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${file} did not end within ${limitMs} ms:\n${out}`))
    }, limitMs)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
  })
}

test('examples: every example has an expected output here', () => {
  assert.deepEqual(examples, Object.keys(expected).sort())
})

describe('examples', { concurrency: true }, () => {
  for (const file of examples) {
    test(`examples/${file} runs against its own local server and exits 0`, async () => {
      const { code, out } = await run(file, 30_000)
      assert.equal(code, 0, out)
      assert.match(out, expected[file])
    })
  }
})
