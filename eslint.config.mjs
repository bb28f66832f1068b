// ESLint flat config: `npm run lint` (with clippy) and the first step of `npm test`. Rules and
// why: ADR 1215.
import js from '@eslint/js'
import globals from 'globals'

// Errors that are bugs or hide them, not style: no formatter rules here.
const rules = {
  // `_name` marks an argument, binding or caught error kept on purpose.
  'no-unused-vars': ['error', {
    args: 'after-used',
    argsIgnorePattern: '^_',
    varsIgnorePattern: '^_',
    caughtErrors: 'all',
    caughtErrorsIgnorePattern: '^_',
    destructuredArrayIgnorePattern: '^_',
    ignoreRestSiblings: true,
  }],
  // `x == null` (null or undefined) is the one loose comparison kept.
  eqeqeq: ['error', 'always', { null: 'ignore' }],
  'no-var': 'error',
  'prefer-const': ['error', { destructuring: 'all' }],
  // Callers catch what a library throws or rejects with: always an Error.
  'no-throw-literal': 'error',
  'prefer-promise-reject-errors': 'error',
  'array-callback-return': 'error',
  'no-self-compare': 'error',
  // `catch {}` is this code's idiom for a best-effort step; any other empty block is an error.
  'no-empty': ['error', { allowEmptyCatch: true }],
  'no-template-curly-in-string': 'error',
  'no-unreachable-loop': 'error',
  'no-sequences': 'error',
  'no-new-wrappers': 'error',
  'no-extend-native': 'error',
  'no-proto': 'error',
  'no-eval': 'error',
  'no-implied-eval': 'error',
  'no-new-func': 'error',
  'default-case-last': 'error',
}

export default [
  {
    // Build output, installs, the per-platform packages and generated files (native.js is
    // written by `napi build`).
    ignores: ['target/**', '**/node_modules/**', 'npm/**', 'native.js', 'dist-pack/**', 'dist-package/**', '.tmp/**', 'demo/out/**'],
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { ecmaVersion: 2024, sourceType: 'commonjs', globals: { ...globals.node } },
    rules,
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { ...globals.node } },
    rules,
  },
  {
    // The package itself writes nothing to the console: it reports through events and errors.
    files: ['index.{js,mjs}', 'lib/**/*.js', '{undici,otel,prometheus,redis}.{js,mjs}'],
    rules: { 'no-console': 'error' },
  },
  {
    // Tests throw and reject with non-Errors on purpose (the library must cope), and hold code
    // and workflow text with `${...}` in plain strings.
    files: ['__test__/**'],
    rules: { 'no-throw-literal': 'off', 'prefer-promise-reject-errors': 'off', 'no-template-curly-in-string': 'off' },
  },
  {
    // The compatibility suite also runs under Bun and Deno.
    files: ['__test__/compat/**'],
    languageOptions: { globals: { Bun: 'readonly', Deno: 'readonly' } },
  },
]
