// The live terminal view. On a terminal it redraws one block in place; anywhere else (CI, a
// pipe, a file) it prints one plain line every few seconds: no cursor movement, no colour.

const SPARK = '▁▂▃▄▅▆▇█'

const fmtMs = (ms) => (ms === null || ms === undefined ? '   – ' : ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`)
const pad = (v, n) => String(v).padStart(n)

function bar(fraction, width) {
  const full = Math.round(Math.max(0, Math.min(1, fraction)) * width)
  return '█'.repeat(full) + '░'.repeat(width - full)
}

function sparkline(values, top, width) {
  const v = values.slice(-width)
  return v.map((x) => (x === null ? ' ' : SPARK[Math.min(SPARK.length - 1, Math.floor((x / top) * SPARK.length))])).join('')
}

export class View {
  constructor({ out = process.stdout, seconds, algorithm, interactive = out.isTTY === true && !process.env.CI }) {
    this.out = out
    this.seconds = seconds
    this.algorithm = algorithm
    this.interactive = interactive
    this.drawn = 0
    this.lastPlain = -Infinity
    // Plain mode: about 18 lines for a whole run, at least one every 2 s.
    this.plainEvery = Math.min(2, Math.max(1, seconds / 18))
    this.color = interactive && !process.env.NO_COLOR
  }

  paint(code, text) {
    return this.color ? `\x1b[${code}m${text}\x1b[0m` : text
  }

  start(info) {
    this.healthyCapacity = info.capacity
    const lines = [
      `resilix demo: ${info.seconds} s against ${info.url}`,
      `  upstream serves ${info.capacity} at once (median ${info.latencyMs} ms); from ${info.degradeAt.toFixed(0)} s to ${info.recoverAt.toFixed(0)} s only ${info.degradedCapacity}` +
        (info.slowdown !== 1 ? `, ${info.slowdown}× slower` : '') +
        `; ${info.rate} calls/s offered, deadline ${info.timeoutMs} ms`,
      `  resilix: library defaults, algorithm ${info.algorithm}, windowMinMs ${info.windowMinMs}` + (info.windowMinMs !== 2000 ? ' (default 2000; shortened so the story fits the run)' : ''),
      '',
    ]
    this.out.write(lines.join('\n') + '\n')
    if (this.interactive) this.out.write('\x1b[?25l') // hide the cursor while redrawing
  }

  update(snap, rec) {
    if (this.interactive) this.redraw(snap, rec)
    else if (snap.t - this.lastPlain >= this.plainEvery - 1e-9) {
      this.lastPlain = snap.t
      this.out.write(this.plainLine(snap) + '\n')
    }
  }

  plainLine(s) {
    return [
      `${pad(s.t.toFixed(1), 5)} s ${bar(s.t / this.seconds, 10)}`,
      s.phase.padEnd(9),
      `capacity ${pad(s.capacity, 3)}`,
      `limit ${pad(s.limit ?? '–', 3)}`,
      `inflight ${pad(s.inflight, 3)}`,
      `queued ${pad(s.queued, 3)}`,
      `p90 ${pad(fmtMs(s.p90UpstreamMs), 6)}`,
      `ok/s ${pad(Math.round(s.okPerS), 4)}`,
      `shed/s ${pad(Math.round(s.shedPerS + s.timeoutPerS), 4)}`,
      `breaker ${s.breaker ?? 'off'}`,
    ].join('  ')
  }

  redraw(s, rec) {
    const limits = rec.series.map((x) => x.limit)
    const top = Math.max(this.healthyCapacity * 2, ...limits.filter((x) => x !== null), 1)
    const phaseColor = s.phase === 'degraded' ? '33' : '32'
    const t = rec.totals
    const breakerColor = s.breaker === 'closed' ? '32' : s.breaker === 'open' ? '31' : '33'
    const lc = rec.lastLimitChange
    const lines = [
      `  ${bar(s.t / this.seconds, 40)} ${pad(s.t.toFixed(1), 5)} / ${this.seconds} s   ${this.paint(phaseColor, s.phase)}`,
      '',
      `  upstream   capacity ${pad(s.capacity, 3)}   serving ${pad(s.upstreamBusy, 3)}   waiting inside it ${pad(s.upstreamWaiting, 4)}`,
      `  resilix    limit ${this.paint('1', pad(s.limit ?? '–', 4))}   inflight ${pad(s.inflight, 4)}   queued ${pad(s.queued, 4)}   breaker ${this.paint(breakerColor, s.breaker ?? 'off')}`,
      `  limit      ${sparkline(limits, top, 60)}`,
      `  p90        upstream ${pad(fmtMs(s.p90UpstreamMs), 8)}   end to end ${pad(fmtMs(s.p90EndToEndMs), 8)}   (baseline ${fmtMs(s.baselineMs || null)})`,
      `  per second offered ${pad(Math.round(s.offeredPerS), 4)}   ok ${pad(Math.round(s.okPerS), 4)}   shed ${pad(Math.round(s.shedPerS), 4)}   timed out ${pad(Math.round(s.timeoutPerS), 4)}`,
      `  totals     ok ${pad(t.ok, 6)}   shed ${pad(t.shed, 6)}   timed out ${pad(t.timeouts, 5)}   errors ${pad(t.errors, 3)}`,
      `  events     ${rec.limitChanges} limit changes` +
        (lc ? ` (last ${lc.previous} → ${lc.limit} at ${lc.t.toFixed(1)} s)` : '') +
        `, ${rec.breakerChanges.length} breaker changes`,
    ]
    let text = this.drawn ? `\x1b[${this.drawn}F` : ''
    for (const l of lines) text += `\x1b[2K${l}\n`
    this.out.write(text)
    this.drawn = lines.length
  }

  finish() {
    if (this.interactive) this.out.write('\x1b[?25h')
  }
}
