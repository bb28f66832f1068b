// The README is the reference: it must not drift from the typed surface. These checks
// read README.md and index.d.ts as text: every option has a row in the Options table with the
// default index.d.ts states, every verdict and every rejection reason has a row, the first screen
// is for npm users, and the repository commands stay in Development.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const dts = readFileSync(join(root, 'index.d.ts'), 'utf8')

/** The text of a `## title` or `### title` section, up to the next heading of its level or higher. */
function section(title) {
  const m = new RegExp(`\\n(#{2,3}) ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`).exec(readme)
  assert.ok(m, `README has a "## ${title}" or "### ${title}" section`)
  const next = new RegExp(`\\n#{2,${m[1].length}} `, 'g')
  next.lastIndex = m.index + 1
  const end = next.exec(readme)
  return readme.slice(m.index, end ? end.index : undefined)
}

/** Table rows of a section as arrays of cells; the first cell's backticks are removed. */
function rows(text) {
  return text
    .split('\n')
    .filter((l) => l.startsWith('| ') && !/^\|[-| ]+\|$/.test(l))
    .map((l) =>
      l
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    )
}

/** `{ option: 'Default …' text }` for every documented property of a d.ts interface. */
function documented(iface, prefix) {
  const m = new RegExp(`export interface ${iface} \\{([\\s\\S]*?)\\n\\}`).exec(dts)
  assert.ok(m, `index.d.ts declares ${iface}`)
  const out = {}
  for (const p of m[1].matchAll(/\/\*\*([\s\S]*?)\*\/\s*\n\s*(\w+)\??:/g)) out[prefix + p[2]] = p[1]
  return out
}

test('README: the first screen is for npm users: npm install resilix, then execute and the interceptor side by side', () => {
  const lines = readme.split('\n')
  assert.equal(lines[0], '# resilix')
  const firstScreen = lines.slice(0, 45).join('\n')
  assert.match(firstScreen, /```sh\nnpm install resilix\n```/)
  assert.match(firstScreen, /rx\.execute\(async \(ctx\) =>[\s\S]*ctx\.mark\(\)/)
  assert.match(firstScreen, /setGlobalDispatcher\(new Agent\(\)\.compose\(interceptor\(rx\)\)\)/)
  assert.doesNotMatch(firstScreen, /npm run demo|cargo/, 'repository commands live in Development')
})

test('README: Development keeps the two repository commands a copy-paste away', () => {
  const dev = section('Development')
  assert.match(dev, /```sh\nnpm install && npm run demo\s+#[^\n]*\nnpm test\s+#[^\n]*\n```/)
})

// npm shows the README without the repository around it: a relative link to a file that is not
// in the tarball (an ADR, a plot, BENCHMARKS.md) is dead there. Links are anchors or absolute.
test('README links work on npm too: anchors or absolute URLs, never relative paths', () => {
  const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g), ...readme.matchAll(/^\[[^\]]+\]: (\S+)$/gm)].map((m) => m[1])
  assert.ok(links.length > 30)
  const relative = links.filter((l) => !l.startsWith('#') && !/^https:\/\//.test(l))
  assert.deepEqual(relative, [])
  const anchors = new Set(
    [...readme.matchAll(/^#+ (.+)$/gm)].map((m) =>
      m[1].toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-'),
    ),
  )
  for (const l of links.filter((l) => l.startsWith('#'))) assert.ok(anchors.has(l.slice(1)), `anchor ${l}`)
})

test('README documents every interceptor option of undici.d.ts', () => {
  const udts = readFileSync(join(root, 'undici.d.ts'), 'utf8')
  const m = /export interface InterceptorOptions \{([\s\S]*?)\n\}/.exec(udts)
  const options = [...m[1].matchAll(/\n {2}(\w+)\?:/g)].map((x) => x[1])
  assert.deepEqual(options, ['key', 'timeoutMs', 'mark', 'bodyTimeoutMs', 'classify', 'retry', 'retryMethods', 'replayBodyBytes', 'priority', 'tenant', 'cost', 'usage', 'pace'])
  const table = new Map(rows(section('Every fetch: the undici interceptor')).map((r) => [r[0].replace(/`/g, ''), r]))
  for (const o of options) assert.ok(table.has(o), `interceptor option ${o} has a row`)
  assert.match(table.get('bodyTimeoutMs')[1], /60 000/)
  assert.match(udts, /Default 60000/)
})

test('README says in bold that streams must call ctx.mark()', () => {
  assert.ok(readme.includes('**If you stream, you must call `ctx.mark()`, or the limiter will mis-tune.**'))
})

test('every option of index.d.ts has a row in the Options table, with the same default', () => {
  const table = new Map(rows(section('Options')).map((r) => [r[0].replace(/`/g, ''), r]))
  const options = {
    ...documented('ResilixOptions', ''),
    ...documented('QueueOptions', 'queue.'),
    ...documented('BreakerOptions', 'breaker.'),
    ...documented('BulkheadOptions', 'bulkhead.'),
    ...documented('RetryOptions', 'retry.'),
    ...documented('RetryBudgetOptions', 'retryBudget.'),
  }
  assert.ok(Object.keys(options).length >= 30)
  for (const [name, doc] of Object.entries(options)) {
    const row = table.get(name)
    assert.ok(row, `Options table has a row for ${name}`)
    assert.ok(row.length >= 4, `${name}: default, source and accepted range columns`)
    const d = /Default (-?[\d.]+)[ .,;(]/.exec(doc)
    if (d) {
      const readmeDefault = Number(row[1].replace(/[ `]/g, '').replace(/\(.*$/, ''))
      assert.equal(readmeDefault, Number(d[1]), `${name}: README default ${row[1]}, index.d.ts ${d[1]}`)
    }
  }
})

test('every verdict and every rejection reason is documented', () => {
  const verdicts = /export type Verdict = ([^\n]+)/.exec(dts)[1].match(/'[\w-]+'/g)
  const classification = section('Verdicts and classification')
  for (const v of verdicts) assert.ok(classification.includes('`' + v.slice(1, -1) + '`'), `verdict ${v}`)
  const reasons = /export type RejectReason = ([^\n]+)/.exec(dts)[1].match(/'[\w-]+'/g)
  const errorRows = rows(section('Errors')).map((r) => r[0])
  for (const r of reasons) assert.ok(errorRows.includes('`' + r + '`'), `reason ${r} has a row in the Errors section`)
})

// A paragraph once ended with "(The interceptor": every prose paragraph (outside code, headings
// and tables) ends as a sentence does, with its parentheses closed.
test('README: no paragraph stops mid-sentence', () => {
  const prose = readme.replace(/```[\s\S]*?```/g, '').split(/\n\s*\n/).map((p) => p.trim())
  const cut = prose.filter((p) => {
    if (p === '' || /^(#|\|)/.test(p) || /^(\[[^\]]+\]: \S+\n?)+$/.test(p)) return false // link reference definitions
    const opened = (p.match(/\(/g) ?? []).length - (p.match(/\)/g) ?? []).length
    return opened !== 0 || !/[.:!?)]$/.test(p.replace(/[*_]+$/, ''))
  })
  assert.deepEqual(cut.map((p) => p.slice(-80)), [])
})

// Users write the types down (`ExecuteOptions`, `CallContext`, …): the README names every type
// the typings export, so that nobody has to guess one.
test('README names every type the typings export', () => {
  const exported = ['index.d.ts', 'undici.d.ts', 'otel.d.ts', 'prometheus.d.ts'].flatMap((f) => {
    const text = readFileSync(join(root, f), 'utf8')
    const classes = new Set([...text.matchAll(/^export declare class (\w+)/gm)].map((m) => m[1]))
    // An interface merged into a class (`interface Resilix`) is the class, documented as API.
    return [...text.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1]).filter((t) => !classes.has(t))
  })
  assert.ok(exported.includes('CallContext') && exported.includes('InterceptorOptions'))
  const types = section('Types')
  const missing = exported.filter((t) => !new RegExp('`' + t + '(<[^`]*>)?`').test(types))
  assert.deepEqual(missing, [], 'each exported type is in the Types table')
})

// A reference, with the guides beside it: short enough to look things up in, and what a newcomer
// missed in it is there.
test('README is at most 600 lines, and links every guide of docs/guides', () => {
  assert.ok(readme.split('\n').length <= 600, `README has ${readme.split('\n').length} lines`)
  const guides = readdirSync(join(root, 'docs', 'guides')).filter((f) => f.endsWith('.md'))
  assert.ok(guides.length >= 10)
  for (const g of guides) assert.ok(readme.includes(`(https://github.com/resilix/resilix/blob/main/docs/guides/${g})`), `README links ${g}`)
})

/** Prose lines longer than `max` characters: table rows, fenced code and link reference definitions excepted. */
function longProse(text, max = 120) {
  let code = false
  return text.split('\n').flatMap((line, i) => {
    if (/^\s*```/.test(line)) code = !code
    if (code || /^\s*```/.test(line) || line.startsWith('|') || /^\[[^\]]+\]: \S+$/.test(line)) return []
    return [...line].length > max ? [`${i + 1}: ${line.slice(0, 60)}… (${[...line].length})`] : []
  })
}

// Markdown renders a paragraph the same however it is wrapped, so a line count says nothing
// unless the prose is wrapped as it is read and edited: at about 100 columns, none over 120.
test('README and the guides: prose wrapped, no line over 120 characters', () => {
  assert.deepEqual(longProse(readme), [], 'README.md')
  for (const g of readdirSync(join(root, 'docs', 'guides')).filter((f) => f.endsWith('.md'))) {
    assert.deepEqual(longProse(readFileSync(join(root, 'docs', 'guides', g), 'utf8')), [], `docs/guides/${g}`)
  }
})

test('README writes the policy order once, the quota in it, and refers to it elsewhere', () => {
  const order = 'retry → breaker → quota → throttle → limiter (+ queue) → bulkhead → timeout'
  const texts = [readme, ...readdirSync(join(root, 'docs', 'guides')).map((g) => readFileSync(join(root, 'docs', 'guides', g), 'utf8'))]
  const written = texts.flatMap((t) => t.match(/retry → breaker[^*\n]*/g) ?? [])
  assert.deepEqual(written, [order])
  assert.ok(section('Policies and their order').includes(`**${order}**`))
  const headings = [...section('Policies and their order').matchAll(/\n### (.+)/g)].map((m) => m[1])
  assert.deepEqual(headings, ['Retry', 'Circuit breaker', 'Quota', 'Adaptive throttle', 'Limiter and queue', 'Bulkhead', 'Timeout'])
})

test('README: execute lists cost, ctx and a permit have charge()', () => {
  const execute = section('`rx.execute(fn, options?) → Promise<T>`')
  const options = new Map(rows(execute).map((r) => [r[0].replace(/`/g, ''), r]))
  assert.match(options.get('cost')?.[3] ?? '', /quota/)
  assert.ok(options.has('charge(usage)'), 'the ctx table has charge(usage)')
  assert.match(section('`rx.acquire(key?, options?) → Promise<Permit>`, `rx.acquire({ key, timeoutMs, signal, priority, tenant, cost })`').replace(/\s+/g, ' '), /A permit has `key`, `mark\(\)` \(as `ctx\.mark\(\)`\),\s+`charge\(usage\)`/)
})

test('README: execute and the interceptor are keyed alike (by origin) wherever both could reach one upstream', () => {
  const code = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n')
  assert.doesNotMatch(code, /key: url\.host|key: '[\w.-]+\.(com|example)'/, 'no execute keyed by a host in the README')
  assert.match(section('Quick start'), /\{ key: url\.origin \}/)
})

test('README: what the interceptor cannot retry stands beside the advice to turn an SDK\'s retries off', () => {
  const para = readme.split(/\n\s*\n/).find((p) => p.includes('maxRetries: 0'))
  assert.ok(para, 'README tells SDK users to turn their retries off')
  assert.match(para, /replayBodyBytes/)
  assert.match(para, /unknown size/)
  assert.match(para, /through `execute`/)
})
