// resilix/prometheus: resilix's calls and state as prom-client metrics. Needs prom-client 15
// (an optional peer dependency).
import type { Registry } from 'prom-client'
import type { Resilix } from './index.js'

export interface PrometheusOptions {
  /** The registry the metrics are registered in. Default: prom-client's global `register`. */
  registry?: Registry
  /**
   * Bucket boundaries of the two duration histograms, seconds. Default
   * `[0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]`
   * (OpenTelemetry's advice for HTTP client request durations).
   */
  buckets?: number[]
}

/** What `instrument` returns: `dispose()` stops counting and unregisters the metrics. */
export interface Instrumentation {
  dispose(): void
}

/**
 * Registers one instance's metrics, each labelled `key`: `resilix_call_duration_seconds`
 * (histogram, + `verdict`), `resilix_call_wait_time_seconds` (histogram),
 * `resilix_call_rejections_total` (+ `reason`), `resilix_queue_timeouts_total`, and the gauges
 * `resilix_call_limit`, `resilix_call_active`, `resilix_call_queued`, `resilix_breaker_state`
 * (+ `state`), read per scrape. Once per registry.
 * @throws {TypeError} when `rx` is not a Resilix, or an option is unknown.
 * @throws {Error} `code: 'ERR_RESILIX_PEER_MISSING'` when prom-client is not installed.
 */
export declare function instrument(rx: Resilix, options?: PrometheusOptions): Instrumentation
