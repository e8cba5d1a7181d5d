import { GrpcTypes } from '@mysten/sui/grpc';
import { ARITHMETIC_ERROR, abortName } from '../../protocol/aborts.ts';
import type { MoveAbort } from '../chain.ts';

/**
 * Names a failed Sui execution the way the daemon reports it (MoveAbort: name, code, module): a Move abort
 * in the Atoma db module by the contract's error name (contracts.md §2.21, codes from src/protocol/aborts.ts),
 * the framework aborts the contract can reach (§2.20) by theirs, an arithmetic error as the dev network
 * names it, and any other failure by its execution error kind.
 */

const Kind = GrpcTypes.ExecutionError_ExecutionErrorKind;

/** A failed execution (the gRPC ExecutionError) as the Submission's MoveAbort; other failures by their kind. */
export function decodeExecutionError(error: GrpcTypes.ExecutionError | undefined): MoveAbort {
  const details = error?.errorDetails;
  if (error?.kind === Kind.MOVE_PRIMITIVE_RUNTIME_ERROR) {
    // A fullnode sends the location in the abort details with no abort code (sui-rpc's conversion of
    // MovePrimitiveRuntimeError { location }), and no details when the location is unknown. The kind also
    // covers stack and value-depth overflows and vector index errors, which the db module cannot reach
    // (it checks its vector lengths and does not recurse): from it, this is u64 overflow, underflow or
    // division by zero (§2.20), named like the dev network names it.
    const module = details?.oneofKind === 'abort' ? details.abort.location?.module : undefined;
    return { name: ARITHMETIC_ERROR, code: 0, module: module ?? 'unknown' };
  }
  if (details?.oneofKind === 'abort') {
    const abort = details.abort;
    const module = abort.location?.module ?? 'unknown';
    const raw = abort.abortCode ?? 0n;
    const code = raw <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(raw) : 0;
    const named = abortName(module, code);
    return { name: named === 'unknown' ? (abort.cleverError?.constantName ?? named) : named, code, module };
  }
  if (!error) return { name: 'unknown', code: 0, module: 'unknown' };
  // e.g. InsufficientGas, CommandArgumentError.
  return { name: executionErrorKindName(error.kind), code: 0, module: 'execution' };
}

/** INSUFFICIENT_GAS gives InsufficientGas; an unset or unknown kind gives 'unknown'. */
export function executionErrorKindName(
  kind: GrpcTypes.ExecutionError_ExecutionErrorKind | undefined,
): string {
  const text = kind === undefined ? undefined : Kind[kind];
  if (!text || kind === Kind.EXECUTION_ERROR_KIND_UNKNOWN) return 'unknown';
  return text
    .split('_')
    .map((word) => word.charAt(0) + word.slice(1).toLowerCase())
    .join('');
}
