// Builds the addon when it is missing or older than the Rust sources, so that `npm test` and
// `npm run demo` work on a fresh clone.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

function newest(path) {
  const s = statSync(path)
  if (!s.isDirectory()) return s.mtimeMs
  let m = 0
  for (const e of readdirSync(path)) m = Math.max(m, newest(join(path, e)))
  return m
}

const addons = readdirSync(root).filter((f) => f.startsWith('resilix.') && f.endsWith('.node'))
const built = addons.length ? Math.max(...addons.map((f) => statSync(join(root, f)).mtimeMs)) : 0
const sources = Math.max(newest(join(root, 'src')), newest(join(root, 'engine', 'src')), newest(join(root, 'Cargo.toml')), newest(join(root, 'build.rs')))
if (!built || !existsSync(join(root, 'native.js')) || built < sources) {
  console.log('resilix: building the native addon (release)…')
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' })
}
