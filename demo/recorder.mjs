// What the demo measures. Calls report their outcome here; every tick a snapshot joins the
// policies' view (resilix.stats) with the upstream's own (busy, waiting) and the callers'
// (p90 latency, calls per second over the last second). Snapshots feed the view and the chart.

const BUCKETS = 4 // ticks per sliding window

function quantile(values, q) {
  if (values.length === 0) return null
  const s = Float64Array.from(values).sort()
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

function bucket() {
  return { up: [], e2e: [], offered: 0, ok: 0, shed: 0, timeouts: 0, errors: 0 }
}

export class Recorder {
  constructor({ rx, key, upstream, tickMs }) {
    this.rx = rx
    this.key = key
    this.upstream = upstream
    this.tickMs = tickMs
    this.totals = { offered: 0, ok: 0, shed: 0, timeouts: 0, queuedTimeouts: 0, errors: 0 }
    this.shedByReason = {}
    this.lastError = null
    this.limitChanges = 0
    this.lastLimitChange = null
    this.breakerChanges = []
    this.series = []
    this.buckets = [bucket()]
  }

  /** Subscribes to the library's events (the observability surface a user would use). */
  watch(startedAt) {
    const subs = [
      this.rx.onLimitChange((e) => {
        this.limitChanges++
        this.lastLimitChange = { ...e, t: (performance.now() - startedAt) / 1000 }
      }),
      this.rx.onBreakerStateChange((e) => {
        this.breakerChanges.push({ ...e, t: (performance.now() - startedAt) / 1000 })
      }),
      this.rx.onReject((e) => {
        this.shedByReason[e.reason] = (this.shedByReason[e.reason] || 0) + 1
      }),
    ]
    return () => subs.forEach((s) => s.dispose())
  }

  get current() {
    return this.buckets[this.buckets.length - 1]
  }

  offered() {
    this.totals.offered++
    this.current.offered++
  }

  ok(upstreamMs, e2eMs) {
    this.totals.ok++
    const b = this.current
    b.ok++
    b.up.push(upstreamMs)
    b.e2e.push(e2eMs)
  }

  shed() {
    this.totals.shed++
    this.current.shed++
  }

  timeout(queued) {
    this.totals.timeouts++
    if (queued) this.totals.queuedTimeouts++
    this.current.timeouts++
  }

  error(err) {
    this.totals.errors++
    this.current.errors++
    this.lastError = err
  }

  /** Closes the current bucket and returns the snapshot of the last second. */
  tick(t, phase) {
    const win = this.buckets
    const seconds = (win.length * this.tickMs) / 1000
    const sum = (f) => win.reduce((a, b) => a + b[f], 0)
    const s = this.rx.stats(this.key)
    const snap = {
      t,
      phase: phase.name,
      capacity: this.upstream.state.capacity,
      limit: s ? s.limit : null,
      inflight: s ? s.inflight : 0,
      queued: s ? s.queued : 0,
      breaker: s ? s.breaker : null,
      smoothedMs: s ? s.smoothedMs : 0,
      baselineMs: s ? s.baselineMs : 0,
      upstreamBusy: this.upstream.state.busy,
      upstreamWaiting: this.upstream.waiting(),
      p90UpstreamMs: quantile(win.flatMap((b) => b.up), 0.9),
      p90EndToEndMs: quantile(win.flatMap((b) => b.e2e), 0.9),
      offeredPerS: sum('offered') / seconds,
      okPerS: sum('ok') / seconds,
      shedPerS: sum('shed') / seconds,
      timeoutPerS: sum('timeouts') / seconds,
    }
    this.series.push(snap)
    this.buckets.push(bucket())
    if (this.buckets.length > BUCKETS) this.buckets.shift()
    return snap
  }
}

/** Per-phase summary of a run's series (steady state: the second half of each phase). */
export function summarize(series, phases) {
  return phases.map((p, i) => {
    const end = i + 1 < phases.length ? phases[i + 1].from : Infinity
    const all = series.filter((s) => s.t > p.from && s.t <= end)
    const steady = all.slice(Math.floor(all.length / 2))
    const mean = (f) => {
      const v = steady.map((s) => s[f]).filter((x) => x !== null)
      return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null
    }
    const offered = mean('offeredPerS')
    return {
      phase: p.name,
      capacity: p.capacity,
      limit: mean('limit'),
      p90UpstreamMs: mean('p90UpstreamMs'),
      p90EndToEndMs: mean('p90EndToEndMs'),
      okPerS: mean('okPerS'),
      shedPct: offered ? (100 * (mean('shedPerS') + mean('timeoutPerS'))) / offered : 0,
      upstreamWaiting: mean('upstreamWaiting'),
    }
  })
}
