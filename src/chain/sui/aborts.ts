import { GrpcTypes } from '@mysten/sui/grpc';
import type { MoveAbort } from '../chain.ts';
import { dbErrorName } from '../dev/aborts.ts';

/**
 * Names a failed Sui execution the way the daemon reports it (MoveAbort: name, code, module): a Move abort
 * in the Atoma db module by the contract's error name (contracts.md §2.21, codes from src/chain/dev/aborts.ts),
 * the framework aborts the contract can reach (§2.20) by theirs, and any other failure by its execution
 * error kind.
 */

/** Framework aborts the contract reaches (contracts.md §2.20), by module and code. */
const FRAMEWORK_NAMES: Record<string, Record<number, string>> = {
  dynamic_field: { 0: 'EFieldAlreadyExists', 1: 'EFieldDoesNotExist', 2: 'EFieldTypeMismatch' },
  balance: { 2: 'ENotEnough' },
  option: { 262145: 'EOPTION_NOT_SET' },
};

/** The daemon's name for an abort code raised in `module`: the contract's or the framework's, else 'unknown'. */
export function abortName(module: string, code: number): string {
  if (module === 'db') return dbErrorName(code) ?? 'unknown';
  return FRAMEWORK_NAMES[module]?.[code] ?? 'unknown';
}

/** A failed execution (the gRPC ExecutionError) as the Submission's MoveAbort; other failures by their kind. */
export function decodeExecutionError(error: GrpcTypes.ExecutionError | undefined): MoveAbort {
  const details = error?.errorDetails;
  if (details?.oneofKind === 'abort') {
    const abort = details.abort;
    const module = abort.location?.module ?? 'unknown';
    const raw = abort.abortCode ?? 0n;
    const code = raw <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(raw) : 0;
    const named = abortName(module, code);
    return { name: named === 'unknown' ? (abort.cleverError?.constantName ?? named) : named, code, module };
  }
  if (!error) return { name: 'unknown', code: 0, module: 'unknown' };
  // e.g. InsufficientGas, MovePrimitiveRuntimeError (arithmetic), CommandArgumentError.
  return { name: executionErrorKindName(error.kind), code: 0, module: 'execution' };
}

/** INSUFFICIENT_GAS gives InsufficientGas; an unset or unknown kind gives 'unknown'. */
export function executionErrorKindName(
  kind: GrpcTypes.ExecutionError_ExecutionErrorKind | undefined,
): string {
  const text = kind === undefined ? undefined : GrpcTypes.ExecutionError_ExecutionErrorKind[kind];
  if (!text || kind === GrpcTypes.ExecutionError_ExecutionErrorKind.EXECUTION_ERROR_KIND_UNKNOWN)
    return 'unknown';
  return text
    .split('_')
    .map((word) => word.charAt(0) + word.slice(1).toLowerCase())
    .join('');
}
