import { U64_MAX } from '../internal/u64.ts';

/**
 * u64 arithmetic as Move does it: overflow, underflow and division by zero abort the transaction. Move
 * reports these as an arithmetic error, not an abort code (contracts.md §2.20).
 */
export class U64ArithmeticError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'U64ArithmeticError';
  }
}

export function add(a: bigint, b: bigint): bigint {
  const r = a + b;
  if (r > U64_MAX) throw new U64ArithmeticError(`u64 overflow in ${a} + ${b}`);
  return r;
}

export function sub(a: bigint, b: bigint): bigint {
  if (b > a) throw new U64ArithmeticError(`u64 underflow in ${a} - ${b}`);
  return a - b;
}

export function mul(a: bigint, b: bigint): bigint {
  const r = a * b;
  if (r > U64_MAX) throw new U64ArithmeticError(`u64 overflow in ${a} * ${b}`);
  return r;
}

/** Move's `/`: floor division, aborting on zero. */
export function div(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new U64ArithmeticError(`division by zero: ${a} / 0`);
  return a / b;
}
