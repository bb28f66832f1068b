// resilix/otel with the OpenTelemetry SDK: one instance's calls and state as OpenTelemetry
// metrics, collected twice and printed the way a Prometheus exporter would name them.
//   node examples/otel-metrics.mjs   (needs @opentelemetry/api and @opentelemetry/sdk-metrics)
//
// In your app, with your SDK set up (it registers the global MeterProvider):
//   import { instrument } from 'resilix/otel'
//   const metrics = instrument(rx)   // … metrics.dispose() on shutdown
import http from 'node:http'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { Resilix } from 'resilix' // resolves to this repository (package self-reference)
import { instrument } from 'resilix/otel'

// A reader we collect from by hand (an app would use a PeriodicExportingMetricReader).
class ManualReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

/** Prints each data point as `name{attributes} value` (Prometheus-style names). */
async function print(reader, title) {
  console.log(`\n-- ${title}`)
  const { resourceMetrics } = await reader.collect()
  for (const { metrics } of resourceMetrics.scopeMetrics) {
    for (const m of metrics) {
      const name = m.descriptor.name.replace(/\W/g, '_') + (m.descriptor.unit === 's' ? '_seconds' : '')
      for (const p of m.dataPoints) {
        const labels = Object.entries(p.attributes).map(([k, v]) => `${k.replace(/\W/g, '_')}="${v}"`).join(',')
        const value = typeof p.value === 'number' ? p.value : `count ${p.value.count}, sum ${p.value.sum.toFixed(3)} s`
        console.log(`${name}{${labels}} ${value}`)
      }
    }
  }
}

// A local upstream: 20 ms per request, 1 in 10 answers 429.
const server = http.createServer((req, res) => setTimeout(() => res.writeHead(Math.random() < 0.1 ? 429 : 200).end(), 20))
await new Promise((r) => server.listen(0, '127.0.0.1', r))
const url = `http://127.0.0.1:${server.address().port}/`

const reader = new ManualReader()
const provider = new MeterProvider({ readers: [reader] })
const rx = new Resilix({ timeoutMs: 1000 })
const metrics = instrument(rx, { meter: provider.getMeter('example') })

const call = (key) =>
  rx.execute(async (ctx) => {
    const res = await fetch(url, { signal: ctx.signal })
    ctx.mark()
    await res.arrayBuffer()
    return res
  }, { key }).catch(() => {})

// A second of traffic on two keys, collected mid-run and after.
const until = Date.now() + 1000
const pending = []
let collected = false
while (Date.now() < until) {
  for (const key of ['payments.example', 'search.example']) pending.push(call(key))
  await new Promise((r) => setTimeout(r, 5))
  if (!collected && Date.now() > until - 500) {
    collected = true
    await print(reader, 'collection 1 (mid-run)')
  }
}
await Promise.all(pending)
await print(reader, 'collection 2 (after the run)')
metrics.dispose()
await provider.shutdown()
server.close()
server.closeAllConnections()
