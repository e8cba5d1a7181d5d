import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';

/**
 * A bench script's flags, parsed strictly: --help (or -h) prints `help` and exits 0; an unknown flag, a
 * missing value or a stray argument prints one line naming it and exits 2, where parseArgs alone would end
 * in a stack trace (and a script reading process.argv by hand would run in full, ignoring it).
 */
export function benchArgs<const T extends ParseArgsOptionsConfig>(name: string, help: string, options: T) {
  return parseOrExit(name, help, options, false).values;
}

/** benchArgs for a script that also takes positional arguments: its flags and those arguments. */
export function benchArgsAndOperands<const T extends ParseArgsOptionsConfig>(
  name: string,
  help: string,
  options: T,
) {
  const { values, positionals } = parseOrExit(name, help, options, true);
  return { values, positionals };
}

function parseOrExit<const T extends ParseArgsOptionsConfig, const P extends boolean>(
  name: string,
  help: string,
  options: T,
  allowPositionals: P,
) {
  const config = {
    options: { ...options, help: { type: 'boolean', short: 'h' } },
    strict: true,
    allowPositionals,
  } as const;
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    usageError(name, (error as Error).message.split('\n')[0]!);
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    process.stdout.write(`${help}\n`);
    process.exit(0);
  }
  return parsed;
}

/** Ends a bench script on bad arguments: one line naming the script and what is wrong, exit code 2. */
export function usageError(name: string, message: string): never {
  process.stderr.write(`${name}: ${message}; see --help\n`);
  process.exit(2);
}
