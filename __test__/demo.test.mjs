// `npm run demo` in a few seconds: it ends by itself, prints the view (plain lines, since its
// stdout is a pipe here, as in CI) and writes the chart.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const demo = fileURLToPath(new URL('../demo/demo.mjs', import.meta.url))

function run(args, env, limitMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [demo, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the demo did not end within ${limitMs} ms\n${stdout}\n${stderr}`))
    }, limitMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

test('demo: a short run ends by itself, prints the view and writes the chart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'resilix-demo-'))
  try {
    const out = join(dir, 'run.svg')
    // DEMO_SECONDS sets the length, as a user would for a quick look.
    const r = await run(['--out', out], { DEMO_SECONDS: '3' }, 60_000)
    assert.equal(r.code, 0, r.stderr)
    // eslint-disable-next-line no-control-regex -- ESC [ opens a terminal control sequence
    assert.doesNotMatch(r.stdout, /\x1b\[/, 'no cursor movement or colour when stdout is not a terminal')
    const lines = r.stdout.split('\n').filter((l) => /\blimit\s+\d+\b.*\binflight\s+\d+.*\bqueued\s+\d+.*\bp90\b.*\bshed\/s\b.*\bbreaker (closed|open|half-open)/.test(l))
    assert.ok(lines.length >= 2, `view lines printed:\n${r.stdout}`)
    assert.match(r.stdout, /healthy/)
    assert.match(r.stdout, /degraded/)
    assert.match(r.stdout, /recovered/)
    assert.match(r.stdout, /done: \d+ calls offered, \d+ ok/)
    const svg = readFileSync(out, 'utf8')
    assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    assert.match(svg, /Concurrency/)
    assert.match(svg, /resilix limit/)
    const data = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))
    assert.ok(data.series.length >= 8, 'a snapshot every 250 ms')
    assert.ok(data.totals.ok > 100, `calls went through: ${data.totals.ok}`)
    assert.equal(data.totals.errors, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('demo: --help prints the flags; a bad flag value exits 2 with the reason', async () => {
  const help = await run(['--help'], {}, 20_000)
  assert.equal(help.code, 0)
  for (const flag of ['--seconds', '--capacity', '--latency', '--rate', '--timeout', '--out']) assert.match(help.stdout, new RegExp(flag))
  const bad = await run(['--capacity', 'x'], {}, 20_000)
  assert.equal(bad.code, 2)
  assert.match(bad.stderr, /--capacity must be an integer/)
})

// The demo's own story, at its defaults: the upstream serves 20 at once, from a third of the
// run only 10. In the degraded phase's steady state the limit must hold the upstream near its
// capacity (what the chart shows): the mean limit within 2 x the capacity, calls waiting
// inside the upstream no more than the capacity, upstream p90 within 2 x the healthy one.
test('demo: at its defaults the degraded phase is held near the capacity', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'resilix-demo-'))
  try {
    const out = join(dir, 'run.svg')
    const r = await run(['--out', out], {}, 120_000)
    assert.equal(r.code, 0, r.stderr)
    const { summary } = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))
    const healthy = summary.find((s) => s.phase === 'healthy')
    const degraded = summary.find((s) => s.phase === 'degraded')
    t.diagnostic(JSON.stringify(summary))
    assert.ok(degraded.limit <= 2 * degraded.capacity, `mean limit ${degraded.limit} > 2 x ${degraded.capacity}`)
    assert.ok(degraded.upstreamWaiting <= degraded.capacity, `${degraded.upstreamWaiting} waiting in the upstream > ${degraded.capacity}`)
    assert.ok(degraded.p90UpstreamMs <= 2 * healthy.p90UpstreamMs, `upstream p90 ${degraded.p90UpstreamMs} ms > 2 x ${healthy.p90UpstreamMs} ms`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
