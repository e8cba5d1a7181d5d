import { type ParseArgsConfig, parseArgs } from 'node:util';
import { usageError } from './args.ts';
import { allOptions, type CommandSpec, type OptionSpec, type OptionValues } from './spec.ts';
import { didYouMean } from './suggest.ts';

/**
 * A command's arguments to its options and positionals, every mistake a usage error in our own words:
 * the client commands' (parseCommandLine) and the daemon's own (start, replay, token, db: src/main.ts).
 * node:util parseArgs splits the arguments (non-strict, as tokens); the judging is here, because its
 * strict mode answers in its own words ("argument is ambiguous", "Unknown option '-3'. To specify a
 * positional argument ...") and refuses what should reach our checks:
 * - a value is taken as given, even when it starts with a dash (`--price -5`), and a negative number
 *   stands as an argument (`usage 12 -3`), so that each meets its own check and message;
 * - an unknown option names the nearest known one;
 * - a missing value, a value given to a switch, and an option where a value was due say so.
 */

/** An argument that is a negative number (`-5`, `-0.5`, `-.5`), not a short option. */
const NEGATIVE_NUMBER = /^-\.?[0-9]/;

export interface Parsed {
  values: OptionValues;
  positionals: string[];
}

/** A client command's arguments: its own options, its kind's, and the connection and output ones. */
export function parseCommandLine(spec: CommandSpec, args: readonly string[]): Parsed {
  return parseOptions(spec.name, allOptions(spec), args);
}

/**
 * The arguments of `command` (its name in messages, `see node-daemon COMMAND --help`; empty for none)
 * against the options it knows. A switch marked negatable also takes `--no-NAME`, which sets it false.
 */
export function parseOptions(
  command: string,
  known: Record<string, OptionSpec>,
  args: readonly string[],
): Parsed {
  const options: NonNullable<ParseArgsConfig['options']> = Object.fromEntries(
    Object.entries(known).map(([name, o]) => [
      name,
      { type: o.type, ...(o.multiple ? { multiple: true } : {}), ...(o.short ? { short: o.short } : {}) },
    ]),
  );
  const { tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: OptionValues = {};
  const positionals: string[] = [];
  // Short options grouped in one argument (`-hx`) are several tokens with that argument's index.
  let taken = -1;
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      positionals.push(token.value);
      continue;
    }
    const arg = args[token.index]!;
    if (token.index === taken) continue;
    taken = token.index;
    if (NEGATIVE_NUMBER.test(arg)) {
      positionals.push(arg);
      continue;
    }
    const negated = negation(known, token.name, token.rawName);
    if (negated !== undefined) {
      if (token.value !== undefined) throw usageError(command, `--no-${negated} takes no value; got ${arg}`);
      values[negated] = false;
      continue;
    }
    const option = Object.hasOwn(known, token.name) ? known[token.name]! : undefined;
    if (option === undefined || (!token.rawName.startsWith('--') && arg !== token.rawName)) {
      const given = token.rawName.startsWith('--') ? token.rawName : arg;
      throw usageError(command, `unknown option ${given}${optionHint(given, known)}`);
    }
    const flag = `--${token.name}`;
    if (option.type === 'boolean') {
      if (token.value !== undefined) throw usageError(command, `${flag} takes no value; got ${arg}`);
      values[token.name] = true;
      continue;
    }
    const value = token.value;
    const usage = `${flag} ${option.arg ?? 'VALUE'}`;
    if (value === undefined) throw usageError(command, `${flag} needs a value: ${usage}`);
    if (!token.inlineValue && value.startsWith('--')) {
      throw usageError(
        command,
        `${flag} needs a value (${usage}), not the option ${value}; a value that starts with -- goes as ${flag}=${value}`,
      );
    }
    if (option.multiple) {
      const previous = values[token.name];
      values[token.name] = [...(Array.isArray(previous) ? previous : []), value];
    } else values[token.name] = value;
  }
  return { values, positionals };
}

/** The switch `--no-NAME` turns off, when NAME is a negatable switch. */
function negation(known: Record<string, OptionSpec>, name: string, rawName: string): string | undefined {
  if (!rawName.startsWith('--no-')) return undefined;
  const base = name.slice('no-'.length);
  const option = Object.hasOwn(known, base) ? known[base] : undefined;
  return option?.type === 'boolean' && option.negatable === true ? base : undefined;
}

/** " (did you mean --port?)" for a mistyped option, among the known ones and their negations. */
function optionHint(given: string, known: Record<string, OptionSpec>): string {
  const names = Object.entries(known).flatMap(([name, o]) => (o.negatable ? [name, `no-${name}`] : [name]));
  return didYouMean(given.replace(/^-+/, ''), names, '--');
}
