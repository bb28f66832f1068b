// resilix/redis: a quota shared by every process of a fleet through Redis. The client is
// yours: ioredis (a client, a Cluster, or a Sentinel-managed client) or node-redis, both
// optional peer dependencies; this module loads neither.
import type { QuotaStore } from './index.js'

export interface RedisQuotaStoreOptions {
  /** Prefix of the Redis keys (`<prefix>:{<key>}:w` and `:p`, one hash slot per key; `%`, `{` and `}` in the key are written `%25`, `%7B`, `%7D`); no `{` or `}`; every one expires two windows after its last use. Default `'resilix'`. */
  prefix?: string
  /** How long a call to Redis may take before this process falls back, ms. Default 250 (a guess: a loopback Redis answers in under 1 ms, a cross-zone one in a few). */
  timeoutMs?: number
  /**
   * While Redis cannot be reached: `'share'` keeps each process to its share of the budget (its
   * part of the fleet's last-seen spend, at least a quarter of an equal share: the fleet stays
   * within 1.25 × the budget); `'refuse'` refuses every call with reason `'quota'`. Default `'share'`.
   */
  whenDown?: 'share' | 'refuse'
  /**
   * The most processes that share the budget, for a process that has not reached Redis yet (it
   * knows nothing of the fleet): it keeps to an equal share, the budget / `processes`. Default:
   * none, and such a process refuses every call with reason `'quota'` until Redis answers.
   */
  processes?: number
  /** The keys whose quota is shared: a list, or a function of the key. Default: every key. */
  keys?: readonly string[] | ((key: string) => boolean)
}

/** The subset of a Redis client the store uses: ioredis's `evalsha`/`eval` or node-redis's `evalSha`/`eval`. */
export type RedisClientLike =
  | { evalsha(...args: any[]): Promise<unknown>; eval(...args: any[]): Promise<unknown>; status: string }
  | { evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>; eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>; isReady: boolean }

/**
 * A quota store in Redis, for `new Resilix({ quota, quotaStore })`. Pass the client you
 * already have; resilix never connects, closes or configures it. While an instance uses the
 * store, it listens to the client's `error` events, to name them in `lastError`.
 * @throws {TypeError | RangeError} a client that is neither ioredis nor node-redis, or a bad option.
 */
export declare function redisQuotaStore(client: RedisClientLike, options?: RedisQuotaStoreOptions): QuotaStore
