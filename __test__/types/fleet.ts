// The typings of a quota shared through Redis, with the clients users have: ioredis (and its
// Cluster) and node-redis.
import { Redis, Cluster } from 'ioredis'
import { createClient } from 'redis'
import { Resilix, type QuotaStats, type StoreEvent } from 'resilix'
import { redisQuotaStore } from 'resilix/redis'

const ioredis = new Redis({ lazyConnect: true })
const cluster = new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true })
const nodeRedis = createClient()

const rx = new Resilix({
  quota: { requests: 500, tokens: 200_000 },
  quotaStore: redisQuotaStore(ioredis, { prefix: 'app', timeoutMs: 100, whenDown: 'refuse', keys: ['api.openai.com'] }),
})
new Resilix({ quota: { requests: 5 }, quotaStore: redisQuotaStore(cluster, { keys: (key) => key.startsWith('api.') }) })
new Resilix({ quota: { requests: 5 }, quotaStore: redisQuotaStore(nodeRedis) })
new Resilix({ quota: { requests: 5 }, quotaStore: redisQuotaStore(nodeRedis, { processes: 4 }) })

const q: QuotaStats | null | undefined = rx.stats('api.openai.com')?.quota
const state: 'leased' | 'fallback' | 'refusing' | undefined = q?.store?.state
rx.onStore((e: StoreEvent) => console.log(e.key, e.state, e.error ?? '', state))

// @ts-expect-error: a store is made by redisQuotaStore, not written by hand
new Resilix({ quota: { requests: 5 }, quotaStore: {} })
// @ts-expect-error: whenDown is 'share' or 'refuse'
redisQuotaStore(ioredis, { whenDown: 'wait' })
// @ts-expect-error: processes is a number of processes
redisQuotaStore(ioredis, { processes: '4' })
// @ts-expect-error: a URL is not a client
redisQuotaStore('redis://localhost:6379')
