// A retry storm, measured side by side in one run: 4 client processes, 3 attempts each, against a
// local HTTP upstream at 2 × overload. The upstream serves `--servers` requests at a time, each
// `--service-ms` long, queues as many again and answers 503 beyond. Each client sends its share of
// twice the upstream's capacity, open loop (an arrival does not wait for the one before), for
// `--seconds`, with each retry library in turn:
//
//   resilix          new Resilix({ retry: true }), execute(fn, { timeoutMs }): its limiter and
//                    its per-key retry budget
//   cockatiel        retry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff() })
//                    around a plain call
//   p-retry          pRetry(fn, { retries: 2 }) around a plain call
//
// Printed per library: attempts that reach the upstream per first attempt (the upstream counts
// them by an `x-attempt` header each attempt sends), and goodput: requests answered 200 per second
// as % of the upstream's capacity.
//
//   node benches/node/retry-storm.mjs [--seconds 15] [--servers 8] [--service-ms 20] [--timeout-ms 2000]
import { fork } from 'node:child_process'
import { createServer } from 'node:http'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const self = fileURLToPath(import.meta.url)
const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    servers: { type: 'string', default: '8' },
    'service-ms': { type: 'string', default: '20' },
    'timeout-ms': { type: 'string', default: '2000' },
    child: { type: 'string' },
  },
})
const PROCESSES = 4
const ATTEMPTS = 3

if (opt.child) await child(JSON.parse(opt.child))
else await parent()

// ---- the upstream ---------------------------------------------------------------------------
function upstream(servers, serviceMs) {
  const counts = { first: 0, all: 0, ok: 0, shed: 0 }
  let busy = 0
  const queue = []
  const done = () => {
    busy--
    const next = queue.shift()
    if (next) serve(next)
  }
  const serve = (res) => {
    busy++
    setTimeout(() => {
      counts.ok++
      res.end('ok')
      done()
    }, serviceMs)
  }
  const server = createServer((req, res) => {
    counts.all++
    if (req.headers['x-attempt'] === '1') counts.first++
    if (busy < servers) serve(res)
    else if (queue.length < servers) queue.push(res)
    else {
      counts.shed++
      res.writeHead(503)
      res.end()
    }
  })
  server.keepAliveTimeout = 60_000
  return { server, counts }
}

// ---- a client process -----------------------------------------------------------------------
async function child({ lib, url, perSecond, seconds, timeoutMs }) {
  let ok = 0
  let failed = 0
  // One logical request: each attempt tells the upstream which attempt it is.
  const attempt = (n) => async () => {
    n.attempt++
    const res = await fetch(url, { headers: { 'x-attempt': String(n.attempt) } })
    await res.text()
    if (res.status >= 500 || res.status === 429) throw Object.assign(new Error(`status ${res.status}`), { status: res.status })
    return res.status
  }
  let call
  if (lib === 'resilix') {
    const { Resilix } = await import('../../index.js')
    const rx = new Resilix({ retry: { attempts: ATTEMPTS } })
    call = (fn) => rx.execute(fn, { key: 'upstream', timeoutMs })
  } else if (lib === 'cockatiel') {
    const { retry, handleAll, ExponentialBackoff } = await import('cockatiel')
    const policy = retry(handleAll, { maxAttempts: ATTEMPTS - 1, backoff: new ExponentialBackoff() })
    call = (fn) => policy.execute(fn)
  } else {
    const { default: pRetry } = await import('p-retry')
    call = (fn) => pRetry(fn, { retries: ATTEMPTS - 1 })
  }
  const pending = new Set()
  const end = performance.now() + seconds * 1000
  const start = performance.now()
  let sent = 0
  // Open loop: arrivals at a fixed rate, whatever the answers.
  while (performance.now() < end) {
    const due = Math.floor(((performance.now() - start) / 1000) * perSecond)
    for (; sent < due; sent++) {
      const p = call(attempt({ attempt: 0 })).then(
        () => ok++,
        () => failed++,
      )
      pending.add(p)
      p.finally(() => pending.delete(p))
    }
    await new Promise((r) => setTimeout(r, 5))
  }
  // Requests still retrying when the run ends are not counted (their upstream attempts are).
  process.send({ ok, failed, unfinished: pending.size })
  process.exit(0)
}

// ---- parent: one run per library ------------------------------------------------------------
async function parent() {
  const servers = Number(opt.servers)
  const serviceMs = Number(opt['service-ms'])
  const seconds = Number(opt.seconds)
  const capacity = (servers * 1000) / serviceMs
  console.log(`retry storm: ${PROCESSES} processes × ${ATTEMPTS} attempts, open loop at 2 × capacity (${(2 * capacity).toFixed(0)} requests/s in all) for ${seconds} s each`)
  console.log(`  upstream: ${servers} at a time × ${serviceMs} ms (capacity ${capacity.toFixed(0)}/s), queue of ${servers}, 503 beyond; resilix timeoutMs ${opt['timeout-ms']}`)
  console.log(`  command: node ${[fileURLToPath(import.meta.url).replace(/.*benches/, 'benches'), ...process.argv.slice(2)].join(' ')}; Node ${process.version}\n`)
  const rows = []
  for (const lib of ['resilix', 'cockatiel', 'p-retry']) {
    const { server, counts } = upstream(servers, serviceMs)
    await new Promise((r) => server.listen(0, '127.0.0.1', r))
    const url = `http://127.0.0.1:${server.address().port}/`
    const arg = { lib, url, perSecond: (2 * capacity) / PROCESSES, seconds, timeoutMs: Number(opt['timeout-ms']) }
    const results = await Promise.all(
      Array.from({ length: PROCESSES }, () => {
        const c = fork(self, ['--child', JSON.stringify(arg)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
        return new Promise((resolve, reject) => {
          c.once('message', resolve)
          c.once('exit', (code) => code !== 0 && reject(new Error(`${lib} client exited ${code}`)))
        })
      }),
    )
    await new Promise((r) => server.close(r))
    server.closeAllConnections?.()
    const ok = results.reduce((s, r) => s + r.ok, 0)
    rows.push({
      lib,
      perFirst: counts.all / counts.first,
      goodput: ((counts.ok / seconds) / capacity) * 100,
      ok,
      failed: results.reduce((s, r) => s + r.failed, 0),
      sent: counts.all,
      shed: counts.shed,
    })
  }
  const table = [['library', 'attempts at the upstream per first attempt', 'goodput (% of capacity)', 'requests ok / failed', 'attempts sent / shed with 503']]
  for (const r of rows) {
    table.push([r.lib, r.perFirst.toFixed(2), r.goodput.toFixed(0), `${r.ok} / ${r.failed}`, `${r.sent} / ${r.shed}`])
  }
  const widths = table[0].map((_, j) => Math.max(...table.map((r) => r[j].length)))
  for (const [k, r] of table.entries()) {
    console.log('| ' + r.map((v, j) => (j === 0 ? v.padEnd(widths[j]) : v.padStart(widths[j]))).join(' | ') + ' |')
    if (k === 0) console.log('|' + widths.map((w, j) => (j === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|')
  }
  const ours = rows[0].perFirst
  console.log(`\ngoal: resilix ≤ 1.25 attempts per first attempt: ${ours.toFixed(2)} ${ours <= 1.25 ? 'met' : 'NOT met'}`)
}
