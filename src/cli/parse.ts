import { type ParseArgsConfig, parseArgs } from 'node:util';
import { usageError } from './args.ts';
import { allOptions, type CommandSpec, type OptionValues } from './spec.ts';
import { didYouMean } from './suggest.ts';

/**
 * A client command's arguments to its options and positionals, every mistake a usage error in the
 * client's own words. node:util parseArgs splits the arguments (non-strict, as tokens); the judging is
 * here, because its strict mode answers in its own words and refuses what should reach our checks:
 * - a value is taken as given, even when it starts with a dash (`--price -5`), and a negative number
 *   stands as an argument (`usage 12 -3`), so that each meets its own check and message;
 * - an unknown option names the nearest known one;
 * - a missing value, a value given to a flag, and an option where a value was due say so.
 */

/** An argument that is a negative number (`-5`, `-0.5`, `-.5`), not a short option. */
const NEGATIVE_NUMBER = /^-\.?[0-9]/;

export function parseCommandLine(
  spec: CommandSpec,
  args: readonly string[],
): { values: OptionValues; positionals: string[] } {
  const known = allOptions(spec);
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
    const option = Object.hasOwn(known, token.name) ? known[token.name]! : undefined;
    if (option === undefined || (!token.rawName.startsWith('--') && arg !== token.rawName)) {
      const given = token.rawName.startsWith('--') ? token.rawName : arg;
      const hint = didYouMean(given.replace(/^-+/, ''), Object.keys(known), '--');
      throw usageError(spec.name, `unknown option ${given}${hint}`);
    }
    const flag = `--${token.name}`;
    if (option.type === 'boolean') {
      if (token.value !== undefined) throw usageError(spec.name, `${flag} takes no value; got ${arg}`);
      values[token.name] = true;
      continue;
    }
    const value = token.value;
    const usage = `${flag} ${option.arg ?? 'VALUE'}`;
    if (value === undefined) throw usageError(spec.name, `${flag} needs a value: ${usage}`);
    if (!token.inlineValue && value.startsWith('--')) {
      throw usageError(
        spec.name,
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
