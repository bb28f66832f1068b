// The chart of a run: a Vega-Lite spec compiled and rendered to SVG by Vega, headlessly (no
// browser, no canvas, no network: the data is inline). Three panels on one time axis:
// concurrency, latency, calls per second; the degraded phase is shaded.
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

const WIDTH = 760

function long(series, fields) {
  const rows = []
  for (const s of series) {
    for (const [field, label] of fields) {
      if (s[field] !== null && s[field] !== undefined) rows.push({ t: s.t, value: s[field], series: label })
    }
  }
  return rows
}

function panel(title, yTitle, rows, shade, colors, end) {
  return {
    width: WIDTH,
    height: 170,
    title: { text: title, anchor: 'start', fontSize: 13 },
    layer: [
      {
        data: { values: shade },
        mark: { type: 'rect', color: '#f4a261', opacity: 0.15 },
        encoding: { x: { field: 'from', type: 'quantitative', scale: { domain: [0, end], nice: false } }, x2: { field: 'to' } },
      },
      {
        data: { values: rows },
        mark: { type: 'line', interpolate: 'step-after', strokeWidth: 1.6 },
        encoding: {
          x: { field: 't', type: 'quantitative', title: 'seconds', scale: { domain: [0, end], nice: false } },
          y: { field: 'value', type: 'quantitative', title: yTitle },
          color: {
            field: 'series',
            type: 'nominal',
            title: null,
            scale: { domain: colors.map((c) => c[0]), range: colors.map((c) => c[1]) },
            legend: { orient: 'right', labelLimit: 280 },
          },
        },
      },
    ],
  }
}

export function chartSpec({ series, phases, title }) {
  const end = series.length ? series[series.length - 1].t : 0
  const shade = phases
    .map((p, i) => ({ name: p.name, from: p.from, to: i + 1 < phases.length ? phases[i + 1].from : end }))
    .filter((p) => p.name === 'degraded')
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'shaded: the upstream is degraded (capacity halved)', anchor: 'start' },
    background: 'white',
    padding: 12,
    resolve: { scale: { color: 'independent' } },
    vconcat: [
      panel(
        'Concurrency',
        'calls',
        long(series, [['limit', 'resilix limit'], ['inflight', 'in flight'], ['queued', 'queued in resilix'], ['capacity', 'upstream capacity'], ['upstreamWaiting', 'waiting in upstream']]),
        shade,
        [['resilix limit', '#1d3557'], ['in flight', '#457b9d'], ['queued in resilix', '#a8dadc'], ['upstream capacity', '#e63946'], ['waiting in upstream', '#f4a261']],
        end,
      ),
      panel(
        'Latency (p90 over the last second)',
        'ms',
        long(series, [['p90UpstreamMs', 'upstream (start → mark)'], ['p90EndToEndMs', 'end to end (queue wait included)']]),
        shade,
        [['upstream (start → mark)', '#1d3557'], ['end to end (queue wait included)', '#e76f51']],
        end,
      ),
      panel(
        'Calls per second',
        'calls/s',
        long(series, [['offeredPerS', 'offered'], ['okPerS', 'ok'], ['shedPerS', 'shed by resilix'], ['timeoutPerS', 'timed out']]),
        shade,
        [['offered', '#8d99ae'], ['ok', '#2a9d8f'], ['shed by resilix', '#e9c46a'], ['timed out', '#e63946']],
        end,
      ),
    ],
  }
}

/** Renders the run to an SVG file; returns the path. */
export async function writeChart(path, run) {
  // Loaded only when a chart is wanted: the rest of the demo needs neither package.
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')])
  const { spec } = vl.compile(chartSpec(run))
  const view = new vega.View(vega.parse(spec), { renderer: 'none' })
  const svg = await view.toSVG()
  view.finalize()
  await mkdir(dirname(path), { recursive: true })
  await writeFile(path, svg)
  await writeFile(path.replace(/\.svg$/, '') + '.json', JSON.stringify(run, null, 1))
  return path
}
