// The repository stands alone: no tracked file points at a document a reader of this
// repository cannot open (internal specs and notes, internal issue numbers) or at a path on
// one particular machine. Public upstream references ("Netflix #176") are fine. The patterns
// are built from pieces so that this file does not match itself.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const S = '§'
const md = (name) => new RegExp(`\\b${name}\\.md\\b`)

const forbidden = [
  ['an absolute path of a machine', new RegExp(['/wo' + 'rk/', '/ro' + 'ot/', '/ho' + 'me/', '/Us' + 'ers/'].join('|') + '|\\b[A-Z]:\\\\(?![nrt"\'])')],
  ['the removed notes folder', new RegExp('docs/' + 'notes')],
  ['a sibling folder outside the repository', new RegExp('\\.\\./' + 'shared')],
  ['an internal design document', md('DES' + 'IGN')],
  ['an internal reference document', md('REFE' + 'RENCE')],
  ['an internal scenarios document', md('SCENA' + 'RIOS')],
  ['a numbered section of the internal spec', new RegExp(S + '\\s*[0-9]')],
  ['an internal issue number', new RegExp('\\b[Ii]ssues? ' + '#?[0-9]')],
]

const skip = /(^|\/)(package-lock\.json|Cargo\.lock)$|\.(svg|png|jpe?g|gif|ico|node|tgz|gz|woff2?)$/

function trackedFiles() {
  return execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && !skip.test(f) && existsSync(join(root, f)))
}

test('no tracked file points at a document outside the repository or a machine path', () => {
  const hits = []
  for (const file of trackedFiles()) {
    const text = readFileSync(join(root, file), 'utf8')
    if (text.includes('\0')) continue
    text.split('\n').forEach((line, i) => {
      for (const [what, re] of forbidden) {
        if (re.test(line)) hits.push(`${file}:${i + 1}: ${what}: ${line.trim().slice(0, 120)}`)
      }
    })
  }
  assert.deepEqual(hits, [], `${hits.length} forbidden reference(s):\n${hits.join('\n')}`)
})

test('the working-notes folder is gone', () => {
  assert.equal(existsSync(join(root, 'docs', 'no' + 'tes')), false)
})

// The guides are product text too: checked above only once git tracks them.
test('every guide of docs/guides is tracked, so the check above covers it', () => {
  const tracked = new Set(trackedFiles())
  const guides = readdirSync(join(root, 'docs', 'guides')).filter((f) => f.endsWith('.md'))
  assert.ok(guides.length >= 10)
  assert.deepEqual(guides.filter((g) => !tracked.has(`docs/guides/${g}`)), [])
})
