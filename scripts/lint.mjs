// `npm run lint` and the first step of `npm test`: clippy on every Rust target (engine, binding,
// simulator, benches, tests; warnings are errors), then ESLint on the JavaScript (ADR 1215).
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const sh = (cmd, args, opts = {}) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts })

// Clippy ships with rustup's default profile, not its minimal one: add it when it is missing.
const hasClippy = () => sh('cargo', ['clippy', '--version'], { stdio: 'ignore' }).status === 0
if (!hasClippy()) {
  if (sh('cargo', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.error('lint: cargo is not on the PATH: install a Rust toolchain (rustup) first')
    process.exit(1)
  }
  console.log('lint: clippy is missing; adding it with `rustup component add clippy`')
  sh('rustup', ['component', 'add', 'clippy'])
  if (!hasClippy()) {
    console.error('lint: clippy is not installed and could not be added: run `rustup component add clippy`')
    process.exit(1)
  }
}

let failed = 0
// --all-features: the measurement probes and test hooks are linted too.
const clippy = sh('cargo', ['clippy', '--workspace', '--all-targets', '--all-features', '--quiet', '--', '-D', 'warnings'])
if (clippy.status !== 0) {
  console.error(`lint: clippy failed (${clippy.error?.message ?? `exit ${clippy.status}`})`)
  failed++
}
const eslint = sh(process.execPath, [join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings', '0', '.'])
if (eslint.status !== 0) {
  console.error(`lint: eslint failed (${eslint.error?.message ?? `exit ${eslint.status}`})`)
  failed++
}
if (!failed) console.log('lint: clippy and eslint clean')
process.exit(failed ? 1 : 0)
