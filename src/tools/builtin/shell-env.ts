import { HarnessError } from '../../errors/harness-error.js'

/**
 * The environment variables `bash` commands get when nobody adds any: what shells, locales and ordinary tools
 * need to behave, and nothing that usually holds a credential. `NAME_*` stands for every name with that prefix.
 * Anything else in the harness's environment (tokens, database URLs with passwords, cloud keys) is left out:
 * the model reads all output and the session log keeps it, so whatever a command can print can leak.
 */
export const DEFAULT_BASH_ENV: readonly string[] = Object.freeze([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'LC_*',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'TZ',
  'TMPDIR',
])

/** Which variables `bash` passes on; built by {@link resolveShellEnvPolicy}. */
export interface ShellEnvPolicy {
  /** {@link DEFAULT_BASH_ENV} plus the names the user added (`NAME_*` = a prefix). */
  readonly allow: readonly string[]
  /** Variables holding secrets (configured provider keys): never passed, and neither is a copy of their value. */
  readonly secrets: readonly string[]
}

// Provider keys follow this naming everywhere (OPENAI_API_KEY, DEEPSEEK_APIKEY, …); such a variable is a secret
// even when nobody declared it one.
const KEY_NAME = /API_?KEY/i
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const PREFIX = /^[A-Za-z_][A-Za-z0-9_]*\*$/
// Shorter values are too likely to occur by chance ("1", "true", a path) to be treated as a copy of a key.
const MIN_SECRET_LENGTH = 8

/**
 * Checks the user's additions to the environment of `bash` and the names of secret variables.
 * @param add - names (or `PREFIX_*`) to pass on besides {@link DEFAULT_BASH_ENV}
 * @param secrets - variables whose values must never reach a command (the CLI names every provider's key here)
 * @throws HarnessError `INVALID_CONFIG` for a name that is not an environment variable name, and for a name
 *   that is a secret: one listed in `secrets` or one that looks like an API key (`*API_KEY*`, `*APIKEY*`).
 *   A provider key in the shell would end up in the session log, so asking for one is refused, not ignored.
 */
export function resolveShellEnvPolicy(add: readonly unknown[] = [], secrets: readonly unknown[] = []): ShellEnvPolicy {
  if (!Array.isArray(add)) throw new HarnessError(`bashEnv must be an array of variable names, not ${JSON.stringify(add)}`, 'INVALID_CONFIG')
  if (!Array.isArray(secrets)) throw new HarnessError(`secretEnv must be an array of variable names, not ${JSON.stringify(secrets)}`, 'INVALID_CONFIG')
  for (const name of secrets) {
    if (typeof name !== 'string' || !NAME.test(name)) throw new HarnessError(`secretEnv: ${JSON.stringify(name)} is not an environment variable name`, 'INVALID_CONFIG')
  }
  const secretNames = secrets as readonly string[]
  for (const name of add) {
    if (typeof name !== 'string' || !(NAME.test(name) || PREFIX.test(name))) {
      throw new HarnessError(`bashEnv: ${JSON.stringify(name)} is not an environment variable name (letters, digits and _, or a prefix ending in *)`, 'INVALID_CONFIG')
    }
    if (secretNames.includes(name) || (NAME.test(name) && KEY_NAME.test(name))) {
      throw new HarnessError(
        `bashEnv: ${name} holds a provider API key and is never passed to bash (the model reads every command's output and the session log keeps it)`,
        'INVALID_CONFIG',
      )
    }
  }
  return { allow: [...new Set([...DEFAULT_BASH_ENV, ...(add as readonly string[])])], secrets: [...new Set(secretNames)] }
}

/** The policy when nobody adds or declares anything. */
export const DEFAULT_SHELL_ENV_POLICY: ShellEnvPolicy = Object.freeze({ allow: DEFAULT_BASH_ENV, secrets: Object.freeze([]) })

/** What {@link shellEnv} passes on, and what it held back although the allow-list named it. */
export interface ShellEnv {
  readonly env: NodeJS.ProcessEnv
  /** Allowed names left out because they are secrets or carry a secret's value (sorted). */
  readonly withheld: readonly string[]
}

/**
 * The environment for commands: only the variables the policy allows, minus secrets. A variable is left out
 * when its name looks like an API key or is a declared secret, and also when its value contains the value of
 * such a variable — a provider key copied into an allowed name (`export TOKEN=$DEEPSEEK_API_KEY`) stays out.
 */
export function shellEnv(source: NodeJS.ProcessEnv = process.env, policy: ShellEnvPolicy = DEFAULT_SHELL_ENV_POLICY): ShellEnv {
  const isSecretName = (name: string): boolean => KEY_NAME.test(name) || policy.secrets.includes(name)
  const secretValues: string[] = []
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && value.length >= MIN_SECRET_LENGTH && isSecretName(name)) secretValues.push(value)
  }
  const exact = new Set(policy.allow.filter((name) => !name.endsWith('*')))
  const prefixes = policy.allow.filter((name) => name.endsWith('*')).map((name) => name.slice(0, -1))
  const env: NodeJS.ProcessEnv = {}
  const withheld: string[] = []
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || !(exact.has(name) || prefixes.some((prefix) => name.startsWith(prefix)))) continue
    if (isSecretName(name) || secretValues.some((secret) => value.includes(secret))) withheld.push(name)
    else env[name] = value
  }
  return { env, withheld: withheld.sort() }
}
