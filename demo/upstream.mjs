// The demo's upstream: an HTTP server with a real concurrency bottleneck. It serves at most
// `capacity` requests at once; the rest wait FIFO inside the server, without bound, so latency
// climbs with concurrency (the simulator's common world). A request whose caller gave up is still
// served: the upstream does not know. Errors never happen: a degradation here is only slower.
import http from 'node:http'

/** Log-normal around a median (σ 0.3 in the simulator; a little less keeps the charts legible). */
export function logNormal(median, sigma, random = Math.random) {
  const u = 1 - random()
  const v = random()
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
  return median * Math.exp(sigma * z)
}

export async function startUpstream({ capacity, serviceMs, sigma = 0.2, host = '127.0.0.1' }) {
  const state = {
    capacity,
    serviceMs,
    busy: 0, // requests being served
    served: 0,
    peakWaiting: 0,
  }
  // FIFO of waiting requests: an array with a moving head (no O(n) shift per request).
  let fifo = []
  let head = 0
  const waiting = () => fifo.length - head

  function serve(res) {
    state.busy++
    setTimeout(() => {
      state.busy--
      state.served++
      if (!res.destroyed) {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end('ok\n')
      }
      pump()
    }, logNormal(state.serviceMs, sigma))
  }

  function pump() {
    while (state.busy < state.capacity && head < fifo.length) {
      const res = fifo[head]
      fifo[head++] = undefined
      serve(res)
    }
    if (head > 1024 && head * 2 > fifo.length) {
      fifo = fifo.slice(head)
      head = 0
    }
  }

  const server = http.createServer((req, res) => {
    req.resume()
    fifo.push(res)
    state.peakWaiting = Math.max(state.peakWaiting, waiting())
    pump()
  })
  server.keepAliveTimeout = 30_000
  await new Promise((resolve) => server.listen(0, host, resolve))

  return {
    url: `http://${host}:${server.address().port}/`,
    state,
    waiting,
    /** Changes capacity and service time at once (a degradation, or the recovery). */
    set({ capacity: c, serviceMs: s }) {
      if (c !== undefined) state.capacity = c
      if (s !== undefined) state.serviceMs = s
      pump()
    },
    close() {
      fifo = [] // the run is over: whoever still waits gets a closed connection
      head = 0
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
