// What the README tells newcomers, run as written: its fix for `if (!res.ok) throw new Error()`
// (code taken from the README itself), and where `using rx = new Resilix()` parses (under every
// Node runtime the tests have, and through TypeScript).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Resilix, isRejectedError } from '../index.js'
import { runtimes as allRuntimes } from '../scripts/runtimes.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const require = createRequire(import.meta.url)

/** The text of a `##`/`###` section, up to the next heading of its level or higher. */
function section(title) {
  const m = new RegExp(`\\n(#{2,3}) ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`).exec(readme)
  assert.ok(m, `README has a "${title}" section`)
  const next = new RegExp(`\\n#{2,${m[1].length}} `, 'g')
  next.lastIndex = m.index + 1
  const end = next.exec(readme)
  return readme.slice(m.index, end ? end.index : undefined)
}

const AsyncFunction = (async () => {}).constructor

test('README: throwing the status with the error keeps 404s out of the breaker; a plain Error opens it', async () => {
  const text = section('HTTP errors you throw')
  const code = /```js\n([\s\S]*?)```/.exec(text)[1]
  const fix = 'throw Object.assign(new Error(`HTTP ${r.status}`), { status: r.status })'
  assert.ok(code.includes(fix), 'the README shows the one-line fix')
  assert.match(text, /Five in a row \(`breaker\.consecutiveFailures`\) open the/)
  assert.match(text, /A 404 thrown this way is `answered` and never opens the breaker/)
  assert.match(section('Quick start'), /if \(!r\.ok\) throw Object\.assign\(new Error\(`HTTP \$\{r\.status\}`\), \{ status: r\.status \}\)/)
  for (const peer of ['cockatiel', 'opossum']) {
    const guide = readFileSync(join(root, 'docs', 'guides', `migrating-from-${peer}.md`), 'utf8')
    assert.match(guide, /throw `Object\.assign\(new Error\(\.\.\.\), \{ status: res\.status \}\)`/, `the ${peer} guide shows the fix`)
  }

  const server = http.createServer((req, res) => res.writeHead(Number(req.url.slice(1))).end())
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const base = `http://127.0.0.1:${server.address().port}`
  // The README's block, as written, with `rx` and `url` given: it rejects with what fn threw.
  const readmeCall = new AsyncFunction('rx', 'url', `${code}\nreturn res`)
  const plainCall = new AsyncFunction('rx', 'url', `${code.replace(fix, 'throw new Error(`HTTP ${r.status}`)')}\nreturn res`)
  try {
    const rx = new Resilix()
    const url = new URL('/404', base)
    for (let i = 0; i < 25; i++) {
      await assert.rejects(readmeCall(rx, url), (e) => e.status === 404 && !isRejectedError(e))
    }
    const s = rx.stats(url.origin)
    assert.deepEqual([s.breaker, s.verdicts.answered, s.verdicts.failure], ['closed', 25, 0])
    await assert.rejects(readmeCall(rx, new URL('/500', base)), { status: 500 })
    assert.equal(rx.stats(url.origin).verdicts.failure, 1, 'a 500 is still a failure')

    const plain = new Resilix()
    for (let i = 0; i < 5; i++) await assert.rejects(plainCall(plain, url), (e) => e.message === 'HTTP 404' && e.status === undefined)
    assert.deepEqual([plain.stats(url.origin).breaker, plain.stats(url.origin).verdicts.failure], ['open', 5])
    await assert.rejects(plainCall(plain, url), (e) => isRejectedError(e) && e.reason === 'breaker')
  } finally {
    server.close()
  }
})

test('README: `using rx = new Resilix()` parses exactly on the runtimes it names, and through TypeScript', () => {
  const text = section('`rx.close()`, `rx[Symbol.dispose]()`').replace(/\s+/g, ' ') // wrapped prose
  const newer = Number(/where the runtime parses\s+`using`: Node (\d+) and newer, and the Bun and Deno of/.exec(text)?.[1])
  const older = /On Node ([\d, and]+) it\s+is a `SyntaxError`/.exec(text)?.[1].match(/\d+/g).map(Number)
  assert.ok(newer > 0 && older?.length > 0, 'the README names where `using` parses and where it does not')
  const runtimes = allRuntimes(root)
  for (const r of runtimes) assert.equal(r.error, undefined, r.error)
  // Bun and Deno parse it (the README says so); a Node by its major.
  const majors = runtimes.map((r) => (r.label === 'bun' || r.label === 'deno' ? Infinity : Number(r.version.split('.')[0].replace(/^v/, ''))))
  assert.ok(majors.some((m) => m >= newer) && majors.some((m) => older.includes(m)), `runtimes on both sides here: ${majors}`)
  for (const m of majors) assert.ok(m >= newer || older.includes(m), `the README says nothing about Node ${m}`)

  const dir = mkdtempSync(join(tmpdir(), 'resilix-using-'))
  try {
    const index = JSON.stringify(join(root, 'index.mjs')) // Deno imports CommonJS through it
    writeFileSync(
      join(dir, 'using.mjs'),
      `import { Resilix } from ${index}\nlet held\n{\n  using rx = new Resilix()\n  held = rx\n  await rx.execute(() => 1, { key: 'k' })\n}\nconsole.log(JSON.stringify({ keys: held.keys().length }))\n`,
    )
    // TypeScript with a target below esnext rewrites `using` into try/finally; esnext keeps it.
    const typed = JSON.stringify(join(root, 'index.js')) // its typings: index.d.ts
    const ts = `import { Resilix } from ${typed}\nlet held: Resilix | undefined\n{\n  using rx = new Resilix()\n  held = rx\n  await rx.execute(() => 1, { key: 'k' })\n}\nconsole.log(JSON.stringify({ keys: held!.keys().length }))\n`
    writeFileSync(join(dir, 'using.mts'), ts)
    const tsc = (target, outDir) =>
      execFileSync(process.execPath, [
        require.resolve('typescript/bin/tsc'), '--target', target, '--lib', 'es2022,esnext.disposable', '--module', 'nodenext',
        '--moduleResolution', 'nodenext', '--strict', '--types', 'node', '--typeRoots', join(root, 'node_modules/@types'),
        '--outDir', join(dir, outDir), join(dir, 'using.mts'),
      ], { encoding: 'utf8' })
    tsc('es2022', 'es2022')
    const out = join(dir, 'es2022', 'using.mjs')
    writeFileSync(out, readFileSync(out, 'utf8').replace(typed, index)) // the ESM entry, for Deno
    tsc('esnext', 'esnext')
    assert.match(readFileSync(join(dir, 'esnext', 'using.mjs'), 'utf8'), /\busing rx = new Resilix\(\)/, 'esnext keeps `using`')
    assert.doesNotMatch(readFileSync(join(dir, 'es2022', 'using.mjs'), 'utf8'), /\busing rx\b/, 'es2022 rewrites it')

    for (const [i, r] of runtimes.entries()) {
      const run = (file) => spawnSync(r.bin, r.args(file), { encoding: 'utf8', env: { ...process.env, ...r.env } })
      const plain = run(join(dir, 'using.mjs'))
      if (majors[i] >= newer) {
        assert.equal(plain.status, 0, `${r.version}: ${plain.stderr}`)
        assert.deepEqual(JSON.parse(plain.stdout), { keys: 0 }, `${r.version}: closed at the end of the block`)
      } else {
        assert.notEqual(plain.status, 0, `${r.version} parsed \`using\``)
        assert.match(plain.stderr, /SyntaxError/, r.version)
      }
      const compiled = run(join(dir, 'es2022', 'using.mjs'))
      assert.equal(compiled.status, 0, `${r.version}, TypeScript's output: ${compiled.stderr}`)
      assert.deepEqual(JSON.parse(compiled.stdout), { keys: 0 }, `${r.version}: TypeScript's try/finally closed it`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

// The LLM guide's SDK given a `fetch` through `execute`: the real openai SDK, its own retries off,
// against a local API that answers 429 once: resilix retries, sending the same body again, even
// one larger than the interceptor would replay (`replayBodyBytes`, 1 MiB).
test("LLM guide: an SDK's fetch through execute is retried by resilix, its body sent again whatever its size", async () => {
  const guide = readFileSync(join(root, 'docs', 'guides', 'llm-apis-and-quotas.md'), 'utf8')
  const sdk = guide.slice(guide.indexOf('\n## With an SDK\n'))
  let code = /```js\n([\s\S]*?)```/.exec(sdk)[1]
  assert.match(code, /maxRetries: 0/)
  code = code.replace(/^import .*$/gm, '').replace(/^console\.log.*$/gm, '')
  const bodies = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      bodies.push(body)
      if (bodies.length === 1) return res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":{"message":"slow down"}}')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] }))
    })
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const OpenAI = require('openai').default ?? require('openai')
  const prompt = 'x'.repeat(2 * 1024 * 1024) // twice replayBodyBytes
  const env = { OPENAI_BASE_URL: process.env.OPENAI_BASE_URL, OPENAI_API_KEY: process.env.OPENAI_API_KEY }
  process.env.OPENAI_BASE_URL = `http://127.0.0.1:${server.address().port}/v1`
  process.env.OPENAI_API_KEY = 'sk-test'
  try {
    const run = new AsyncFunction('OpenAI', 'Resilix', `${code.replace("content: 'Hello'", 'content: PROMPT')}\nreturn { completion, rx, openai }`.replace('PROMPT', JSON.stringify(prompt)))
    const { completion, rx, openai } = await run(OpenAI, Resilix)
    assert.equal(completion.choices[0].message.content, 'Hello')
    assert.equal(bodies.length, 2, 'the 429 was retried once, by resilix')
    assert.ok(bodies[0].length > 2 * 1024 * 1024 && bodies[1] === bodies[0], 'the same body, over 1 MiB, sent again')
    const s = rx.stats(new URL(openai.baseURL).origin)
    assert.deepEqual([s.retries, s.verdicts.overload, s.verdicts.success], [1, 1, 1])
    rx.close()
  } finally {
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]
    else process.env[k] = v
    server.close()
  }
})
