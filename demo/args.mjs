// The demo's flags. Defaults tell the story in about 36 s: a healthy upstream, then its
// capacity halves (latency climbs, no errors), then it recovers. Every number can be changed.
import { parseArgs } from 'node:util'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))

export const HELP = `npm run demo -- [flags]

  --seconds N      length of the run (default 36; env DEMO_SECONDS sets the default too)
  --capacity N     requests the upstream serves at once while healthy (default 20);
                   while degraded it serves half as many
  --latency MS     the upstream's median service time while healthy (default 40)
  --slowdown X     service time multiplier while degraded (default 1: only capacity halves)
  --rate N         calls offered per second, Poisson arrivals (default 350: 70 % of the
                   healthy capacity, 140 % of the degraded one)
  --timeout MS     per-call deadline, queue wait included (default 1000)
  --algorithm A    vegas | gradient2 | aimd | fixed (default vegas, the library default)
  --window MS      the limiter's shortest measurement window, windowMinMs (default 500:
                   a quarter of the library's 2000, so that a 36 s run shows what takes
                   minutes with the defaults; --window 2000 for the library's own)
  --out FILE       where the chart of the run goes (default demo/out/resilix-demo.svg)
  --no-chart       skip the chart
  --help           this text
`

function number(name, text, { min = 0, integer = false } = {}) {
  const n = Number(text)
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    throw new RangeError(`demo: --${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${text}`)
  }
  return n
}

export function parseDemoArgs(argv = process.argv.slice(2), env = process.env) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: env.DEMO_SECONDS || '36' },
      capacity: { type: 'string', default: '20' },
      latency: { type: 'string', default: '40' },
      slowdown: { type: 'string', default: '1' },
      rate: { type: 'string', default: '350' },
      timeout: { type: 'string', default: '1000' },
      algorithm: { type: 'string', default: 'vegas' },
      window: { type: 'string', default: '500' },
      out: { type: 'string', default: join(here, 'out', 'resilix-demo.svg') },
      'no-chart': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  const capacity = number('capacity', values.capacity, { min: 2, integer: true })
  return {
    help: values.help,
    seconds: number('seconds', values.seconds, { min: 1 }),
    capacity,
    degradedCapacity: Math.max(1, Math.floor(capacity / 2)),
    latencyMs: number('latency', values.latency, { min: 1 }),
    slowdown: number('slowdown', values.slowdown, { min: 0.1 }),
    rate: number('rate', values.rate, { min: 1 }),
    timeoutMs: number('timeout', values.timeout, { min: 1 }),
    algorithm: values.algorithm,
    windowMinMs: number('window', values.window, { min: 1, integer: true }),
    out: values['no-chart'] ? null : resolve(values.out),
  }
}

/** The story: healthy for the first third, degraded for the second, recovered after. */
export function phases(o) {
  const healthy = { capacity: o.capacity, serviceMs: o.latencyMs }
  return [
    { name: 'healthy', from: 0, ...healthy },
    { name: 'degraded', from: o.seconds / 3, capacity: o.degradedCapacity, serviceMs: o.latencyMs * o.slowdown },
    { name: 'recovered', from: (2 * o.seconds) / 3, ...healthy },
  ]
}
