// Type-checked by `npm test` with usage.ts: resilix/undici's typings against undici 7's own.
import { Agent, Pool, setGlobalDispatcher } from 'undici'
import { Resilix } from '../../index.js'
import { interceptor } from '../../undici.js'
import type { InterceptorOptions, MarkAt, ResponseHead, ResponseOutcome } from '../../undici.js'

const rx = new Resilix({ timeoutMs: 2000 })
setGlobalDispatcher(new Agent().compose(interceptor(rx)))
const pool = new Pool('http://127.0.0.1:1').compose(
  interceptor(rx, {
    key: 'payments',
    timeoutMs: 500,
    bodyTimeoutMs: false,
    classify: (o: ResponseOutcome) => (o.ok && o.value.statusCode === 404 ? 'success' : undefined),
  }),
)
const byHost: InterceptorOptions = { key: (opts) => String(opts.origin) }
new Agent().compose(interceptor(rx, byHost), interceptor(rx))
new Agent().compose(interceptor(rx, { mark: 'firstChunk' }), interceptor(rx, { mark: 'headers' }))
const markBy = (r: ResponseHead): MarkAt => (r.headers['content-type'] === 'text/plain' ? 'firstChunk' : 'headers')
interceptor(rx, { mark: markBy })
new Agent().compose(interceptor(rx, { retry: { attempts: 2, retryOn: ['overload'] }, retryMethods: ['GET', 'PUT'] }))
interceptor(rx, { priority: (o) => (o.path.startsWith('/admin') ? 'critical' : undefined), tenant: (o) => o.origin?.toString() })
interceptor(rx, { priority: 'sheddable', tenant: 'batch-jobs' })
const withQuota = new Resilix({ quota: { requests: 50, inputTokens: 40_000, outputTokens: 8_000 } })
interceptor(withQuota, { cost: (o) => ({ inputTokens: Number(o.headers && !Array.isArray(o.headers) ? 1 : 0) }), usage: 'anthropic', pace: true })
interceptor(withQuota, { cost: { tokens: 100 }, usage: (text) => (text.includes('usage') ? { tokens: 1 } : undefined) })
// @ts-expect-error: no such usage reader
interceptor(withQuota, { usage: 'mistral' })
// @ts-expect-error: not a priority
interceptor(rx, { priority: 'urgent' })
// @ts-expect-error: retryMethods is a list of method names
interceptor(rx, { retryMethods: 'GET' })
interceptor(rx, { retryMethods: ['POST'], replayBodyBytes: 4 << 20 })
// @ts-expect-error: replayBodyBytes is a number of bytes
interceptor(rx, { replayBodyBytes: '1MiB' })

// @ts-expect-error: unknown interceptor option
interceptor(rx, { bodyTimeout: 5 })
// @ts-expect-error: classify returns a verdict
interceptor(rx, { classify: () => 'great' })
// @ts-expect-error: mark is 'headers' or 'firstChunk'
interceptor(rx, { mark: 'body' })
// @ts-expect-error: a mark function answers 'headers' or 'firstChunk'
interceptor(rx, { mark: () => true })
// @ts-expect-error: rx is a Resilix
interceptor({}, {})
void pool
