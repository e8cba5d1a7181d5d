import { ARITHMETIC_ERROR, type DbErrorName, dbErrorCode, FRAMEWORK_ABORTS } from '../../protocol/aborts.ts';
import type { MoveAbort } from '../chain.ts';

/** Thrown inside a transaction's execution: the transaction fails with this abort and changes nothing. */
export class MoveAbortError extends Error {
  readonly abort: MoveAbort;
  constructor(abort: MoveAbort, detail?: string) {
    super(`${abort.module}::${abort.name} (${abort.code})${detail ? `: ${detail}` : ''}`);
    this.name = 'MoveAbortError';
    this.abort = abort;
  }
}

/** A named abort of the db module. */
export function abort(name: DbErrorName): never {
  throw new MoveAbortError({ name, code: dbErrorCode(name), module: 'db' });
}

/**
 * A missing key in a Table or ObjectTable: the borrow aborts inside the framework (contracts.md §2.20),
 * sui::dynamic_field::EFieldDoesNotExist, code 1.
 */
export function fieldDoesNotExist(detail: string): never {
  throw new MoveAbortError({ ...FRAMEWORK_ABORTS.fieldDoesNotExist }, detail);
}

/** A balance::split larger than the balance (contracts.md §2.9): sui::balance::ENotEnough, code 2. */
export function notEnough(detail: string): never {
  throw new MoveAbortError({ ...FRAMEWORK_ABORTS.notEnough }, detail);
}

/**
 * u64 overflow, underflow or division by zero (protocol's U64ArithmeticError): Move reports these as an
 * arithmetic error, not an abort code (contracts.md §2.20); named ArithmeticError, code 0, in module db.
 */
export function arithmeticAbort(detail: string): MoveAbortError {
  return new MoveAbortError({ name: ARITHMETIC_ERROR, code: 0, module: 'db' }, detail);
}

/** Option::extract on none (contracts.md §2.17): std::option::EOPTION_NOT_SET, code 0x40001. */
export function optionNotSet(detail: string): never {
  throw new MoveAbortError({ name: 'EOPTION_NOT_SET', code: 262145, module: 'option' }, detail);
}
