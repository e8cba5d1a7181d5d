import { GrpcTypes } from '@mysten/sui/grpc';
import { abortName } from '../../protocol/aborts.ts';
import type { MoveAbort } from '../chain.ts';

/**
 * Names a failed Sui execution the way the daemon reports it (MoveAbort: name, code, module): a Move abort
 * in the Atoma db module by the contract's error name (contracts.md §2.21, codes from src/protocol/aborts.ts),
 * the framework aborts the contract can reach (§2.20) by theirs, and any other failure by its execution
 * error kind.
 */

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
