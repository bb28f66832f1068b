// Every JavaScript block of the README and of the guides (docs/guides/*.md) runs as written, as a
// module of its own, against a real local API (the hosts it names are pointed there) and, where
// it asks for one, a real redis-server: it must run to its end, and a block that calls an
// upstream must reach it. What a block takes as given (`rx`, `url`, …) is set first
// (fixtures/doc-globals.mjs). Shell blocks are commands (Development's two are checked in
// readme.test.mjs); untagged blocks are diagrams and formulas.
import { test, after, before } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDocUpstream } from './fixtures/doc-upstream.mjs'
import { requireRedisServer, startRedis } from './fixtures/redis-server.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const guides = readdirSync(join(root, 'docs', 'guides')).filter((f) => f.endsWith('.md')).sort()
const files = ['README.md', ...guides.map((f) => `docs/guides/${f}`)]
const runner = join(root, '__test__', 'fixtures', 'doc-block-runner.mjs')
const hosts = /https:\/\/(api\.example\.com|api\.openai\.com|api\.anthropic\.com|payments\.example)/g

/** `[{ lang, code, line }]`: the fenced blocks of a Markdown file. */
function blocks(text) {
  const out = []
  const re = /^```(\w*)\n([\s\S]*?)^```$/gm
  for (let m; (m = re.exec(text)); ) out.push({ lang: m[1], code: m[2], line: text.slice(0, m.index).split('\n').length })
  return out
}

let upstream, redis, dir
before(async () => {
  upstream = await startDocUpstream()
  mkdirSync(join(root, '.tmp'), { recursive: true })
  dir = mkdtempSync(join(root, '.tmp', 'doc-blocks-')) // inside the package: `import 'resilix'` resolves to it
})
after(async () => {
  await upstream?.close()
  await redis?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

function run(file, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [runner, file], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000) // a block that hangs fails, named
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
  })
}

test('the README and the guides hold only js, sh and untagged blocks, and at least one js block each', () => {
  for (const f of files) {
    const bs = blocks(readFileSync(join(root, f), 'utf8'))
    assert.deepEqual(bs.filter((b) => !['js', 'sh', ''].includes(b.lang)).map((b) => `${f}:${b.line} ${b.lang}`), [])
    assert.ok(bs.some((b) => b.lang === 'js'), `${f} has a js block`)
  }
  assert.ok(guides.length >= 10, `guides: ${guides}`)
})

for (const f of files) {
  test(`every js block of ${f} runs to its end against a local upstream`, { timeout: 150_000 }, async () => {
    const text = readFileSync(join(root, f), 'utf8')
    const js = blocks(text).filter((b) => b.lang === 'js')
    for (const [i, b] of js.entries()) {
      const env = { DOC_UPSTREAM: upstream.origin, OPENAI_BASE_URL: `${upstream.origin}/v1`, OPENAI_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: upstream.origin, ANTHROPIC_API_KEY: 'sk-ant-test' }
      if (/redis/i.test(b.code)) {
        if (!redis) {
          requireRedisServer()
          redis = await startRedis()
        }
        env.REDIS_URL = `redis://127.0.0.1:${redis.port}`
      }
      const file = join(dir, `${f.replace(/\W/g, '-')}-${i}.mjs`)
      writeFileSync(file, b.code.replace(hosts, upstream.origin))
      const before = upstream.requests()
      const { code, out } = await run(file, env)
      const where = `${f}:${b.line}`
      assert.equal(code, 0, `${where} failed:\n${out}`)
      assert.match(out, /doc-block ok/, where)
      if (/\bfetch\(|\brequest\(|\.create\(/.test(b.code)) assert.ok(upstream.requests() > before, `${where} reached the upstream`)
      // A block that says what it prints (`console.log(…) // what`) prints it.
      for (const m of b.code.matchAll(/console\.log\(.*\) \/\/ (.+)$/gm)) assert.ok(out.includes(m[1]), `${where} printed ${m[1]}:\n${out}`)
    }
  })
}
