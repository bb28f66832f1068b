// How long an upstream's hint holds a key back (ADR 1104), through the undici interceptor with
// its defaults against a real local upstream. Two runs:
//
//   hostile   the first request meets a 429 with `retry-after: 99999999` (1 157 days), every
//             later one a 200. A second request without a deadline waits; printed: when it was
//             answered, the TimeoutOverflowWarnings and the CPU the process spent meanwhile.
//   honest    the upstream is out of budget for `--hint-s` and says so truthfully: each 429
//             carries `retry-after` = the time left. A caller sends one request after another
//             (no deadline). Printed: the 429s it met, and how long after the budget came back
//             its first 200 came. Scaled: a bound B against a hint H behaves as 30 B against 30 H.
//
//   node benches/node/cooldown-bound.mjs [--seconds 5] [--hint-s 12] [--bounds 1000,2000,4000]
import { createServer } from 'node:http'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { Resilix } from '../../index.js'
import { interceptor } from '../../undici.js'

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '5' }, 'hint-s': { type: 'string', default: '12' }, bounds: { type: 'string', default: '1000,2000,4000' } },
})

async function upstream(answer) {
  let n = 0
  const server = createServer((req, res) => {
    req.resume()
    answer(++n, res)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) }
}

async function hostile(seconds, maxCooldownMs) {
  const up = await upstream((n, res) => (n === 1 ? res.writeHead(429, { 'retry-after': '99999999' }).end() : res.end('ok')))
  const quota = maxCooldownMs === undefined ? { requests: 100 } : { requests: 100, maxCooldownMs }
  const rx = new Resilix({ quota })
  const agent = new Agent().compose(interceptor(rx))
  let warnings = 0
  const onWarning = (w) => w.name === 'TimeoutOverflowWarning' && warnings++
  process.on('warning', onWarning)
  await (await request(up.url, { dispatcher: agent })).body.text()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const ac = new AbortController()
  let answeredMs = null
  const waiting = request(up.url, { dispatcher: agent, signal: ac.signal }).then(
    async (r) => {
      await r.body.text()
      answeredMs = performance.now() - t0
    },
    () => {},
  )
  await new Promise((r) => setTimeout(r, seconds * 1000))
  const cpu = process.cpuUsage(cpu0)
  ac.abort()
  await waiting
  process.off('warning', onWarning)
  await agent.close()
  rx.close()
  await up.close()
  const ms = (cpu.user + cpu.system) / 1000
  console.log(`hostile  maxCooldownMs ${maxCooldownMs ?? 'default'}: answered ${answeredMs === null ? `not within ${seconds} s` : `after ${Math.round(answeredMs)} ms`}, ${warnings} TimeoutOverflowWarnings, ${ms.toFixed(0)} ms CPU in ${seconds} s`)
}

async function honest(hintS, maxCooldownMs) {
  const t0 = Date.now()
  const back = t0 + hintS * 1000
  let refusals = 0
  const up = await upstream((n, res) => {
    const left = back - Date.now()
    if (left > 0) {
      refusals++
      return res.writeHead(429, { 'retry-after': String(Math.ceil(left / 1000)) }).end()
    }
    res.end('ok')
  })
  const rx = new Resilix({ breaker: false, throttle: false, quota: { requests: 600, maxCooldownMs } })
  const agent = new Agent().compose(interceptor(rx))
  let firstOk = null
  while (firstOk === null) {
    const r = await request(up.url, { dispatcher: agent })
    await r.body.text()
    if (r.statusCode === 200) firstOk = Date.now()
  }
  await agent.close()
  rx.close()
  await up.close()
  console.log(`honest   hint ${hintS} s, maxCooldownMs ${maxCooldownMs}: ${refusals} 429s met, first 200 ${firstOk - back} ms after the budget came back`)
}

const seconds = Number(values.seconds)
await hostile(seconds)
await hostile(seconds)
await hostile(seconds, 1000)
for (const b of values.bounds.split(',').filter(Boolean).map(Number)) await honest(Number(values['hint-s']), b)
