// The addon as the registry gets it, for `npm run pack:local`: built by the `build:release`
// command (what the release workflow runs), so without the test hooks `npm run build` compiles in
// for the tests, into its own target and output directories, so the tests' build stays as it is
// (ADR 0402).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)

/** What `--features test-hooks` adds to the addon's exports; never in a published binary. */
export const TEST_HOOK_EXPORTS = Object.freeze([
  'clockRateAgainstInstant',
  'clockSource',
  'forcePanicForTest',
  'liveEngineCount',
  'nativeAllocatedBytes',
])

/** Cargo's directory for this build: apart from `target/`, so neither build undoes the other. */
export const RELEASE_TARGET_DIR = join(root, 'target', 'pack')

/** The names a built addon exports, read in a child process (the caller may have its own addon loaded). */
export function exportsOf(file) {
  const r = spawnSync(process.execPath, ['-e', 'console.log(JSON.stringify(Object.keys(require(process.argv[1]))))', resolve(file)], {
    encoding: 'utf8',
  })
  if (r.status !== 0) {
    const why = (r.stderr.split('\n').find((l) => /^\w*Error/.test(l)) ?? r.stderr.trim()).slice(0, 300)
    throw new Error(`${file} does not load as an addon of this platform: ${why}`)
  }
  return JSON.parse(r.stdout).sort()
}

/** The test hooks a built addon exports (none for a binary fit to publish). */
export function testHooksIn(file) {
  const names = exportsOf(file)
  return TEST_HOOK_EXPORTS.filter((n) => names.includes(n))
}

/**
 * Builds the addon with `npm run build:release`'s command into `outDir` and returns the binary's
 * path. Throws, saying why, when the build fails or its binary exports a test hook.
 */
export function buildReleaseBinary(outDir, binaryFile) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const command = pkg.scripts['build:release'].split(/\s+/)
  if (command[0] !== 'napi' || command.includes('test-hooks')) {
    throw new Error(`the build:release script must be a \`napi build\` without test-hooks, not \`${pkg.scripts['build:release']}\``)
  }
  const cli = join(dirname(require.resolve('@napi-rs/cli/package.json')), require('@napi-rs/cli/package.json').bin.napi)
  // Cargo's and napi's progress go to stderr: stdout stays the list of tarballs.
  const r = spawnSync(process.execPath, [cli, ...command.slice(1), '--target-dir', RELEASE_TARGET_DIR, '--output-dir', outDir], {
    cwd: root,
    stdio: ['ignore', 2, 2],
  })
  const file = join(outDir, binaryFile)
  if (r.error || r.status !== 0 || !existsSync(file)) {
    const why = r.error ? r.error.message : r.status !== 0 ? `exit ${r.status ?? r.signal}` : `no ${binaryFile} written`
    throw new Error(
      `building the addon as the registry gets it (the build:release command, with a Rust toolchain) failed (${why}; its output is above). ` +
        'Nothing was packed: the addon `npm run build` makes carries test hooks and is never packed in its place',
    )
  }
  assertNoTestHooks(file, 'is `test-hooks` a default feature in Cargo.toml?')
  return file
}

/** Throws, naming them, when `file` exports test hooks; `hint` says where they may come from. */
export function assertNoTestHooks(file, hint) {
  const hooks = testHooksIn(file)
  if (hooks.length) throw new Error(`${file} exports test hooks (${hooks.join(', ')}), which are never published: ${hint} Nothing was packed`)
}
