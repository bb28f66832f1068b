// The runtime-compatibility suite: what a user of Node, Bun or Deno relies on, run under each by
// `npm test` (scripts/runtimes.mjs). Run one by hand with `node __test__/compat/suite.mjs`,
// `bun __test__/compat/suite.mjs`, or `deno run --allow-read --allow-env --allow-ffi
// --allow-net __test__/compat/suite.mjs`.
import './calls.mjs'
import './policies.mjs'
import './interceptor.mjs'
import { run } from './harness.mjs'

await run()
