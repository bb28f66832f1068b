// The guides beside the README (docs/guides/*.md): each is one topic under one title, and every
// link in it leads somewhere: a relative link to a file of the repository (an anchor in it to one
// of its headings), or an absolute URL. Their code blocks run in doc-blocks.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = join(root, 'docs', 'guides')
const guides = readdirSync(dir).filter((f) => f.endsWith('.md')).sort()

/** GitHub's anchors for a Markdown file's headings. */
const anchors = (text) =>
  new Set([...text.replace(/```[\s\S]*?```/g, '').matchAll(/^#+ (.+)$/gm)].map((m) => m[1].toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')))

test('the guides: the interceptor, streaming, LLM APIs and quotas, priorities, retries, running a fleet, observability, and one per peer to migrate from', () => {
  const peers = ['bottleneck', 'cockatiel', 'got', 'opossum', 'p-limit', 'p-retry']
  assert.deepEqual(guides, [
    'http-interceptor.md', 'llm-apis-and-quotas.md', ...peers.map((p) => `migrating-from-${p}.md`), 'observability.md',
    'priorities-and-tenants.md', 'retries.md', 'running-a-fleet.md', 'streaming.md',
  ])
  for (const g of guides) {
    const text = readFileSync(join(dir, g), 'utf8')
    assert.equal((text.replace(/```[\s\S]*?```/g, '').match(/^# /gm) ?? []).length, 1, `${g} has one title`)
    assert.ok(text.startsWith('# '), `${g} starts with its title`)
  }
})

test('every link of a guide leads to a file of the repository and a heading in it, or is absolute', () => {
  const dead = []
  for (const g of guides) {
    const text = readFileSync(join(dir, g), 'utf8').replace(/```[\s\S]*?```/g, '')
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^https:\/\//.test(link)) continue
      const [path, anchor] = link.split('#')
      const file = path === '' ? join(dir, g) : resolve(dir, path)
      if (!existsSync(file)) {
        dead.push(`${g}: ${link} (no such file)`)
        continue
      }
      if (anchor !== undefined && !anchors(readFileSync(file, 'utf8')).has(anchor)) dead.push(`${g}: ${link} (no such heading)`)
    }
  }
  assert.deepEqual(dead, [])
})
