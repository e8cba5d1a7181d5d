import type { MoveAbort } from '../chain.ts';

/** EBase of the db module (contracts.md §2.21): every named db abort is EBase + its offset. */
export const EBASE = 312_012_000;

/** The db module's abort codes at HEAD, as offsets from EBase (contracts.md §2.21; +8 is unused). */
const DB_ERRORS = {
  ENodeRegDisabled: 0,
  EModelDisabled: 1,
  ENotAuthorized: 2,
  EProtocolFeeCannotBeZero: 3,
  ERelativePerformanceCannotBeZero: 4,
  EEchelonNotFound: 5,
  EEchelonAlreadyExistsForModel: 6,
  ETotalPermilleMustBeLessThan1000: 7,
  ENodeAlreadySubscribedToModel: 9,
  ENodeNotSubscribedToModel: 10,
  ENodeIndexMismatch: 11,
  ENodeAlreadyDisabled: 12,
  ENodeMustWaitBeforeDestroy: 13,
  ECannotSampleZeroNodes: 14,
  ETaskDeprecated: 15,
  ENodeAlreadySubscribedToTask: 16,
  ETaskNotFound: 17,
  ENodeNotSubscribedToTask: 18,
  ENotEnoughEpochsPassed: 19,
  ETaskNotDeprecated: 20,
  ENoNodesSubscribedToTask: 21,
  ENoNodesEligibleForTask: 22,
  ENodeNotSelectedForStack: 23,
  EStackInSettlementDispute: 24,
  ETooManyComputedUnits: 25,
  EStackDoesNotRequireSamplingConsensus: 26,
  EStackNotFound: 27,
  EStackNotInSettlementDispute: 28,
  EStackDisputePeriodOver: 29,
  ENodeNotSelectedForAttestation: 30,
  EStackInDispute: 31,
  EStackDisputePeriodIsNotOver: 32,
  ENodeNotSelectedForSettlement: 33,
  ETaskAlreadyDeprecated: 34,
  EInvalidTaskRole: 35,
  EInvalidSecurityLevel: 36,
  EInvalidPricePerComputeUnit: 37,
  ENodeDoesNotMeetTaskRequirements: 38,
  EInvalidComputeUnits: 39,
  EInsufficientBalance: 40,
  EInvalidCommittedStackProof: 41,
  EInvalidStackMerkleLeaf: 42,
  EInvalidMinimumReputationScore: 43,
  ETaskIsPublic: 44,
  ENodeNotWhitelistedForTask: 45,
  EStackAlreadyInDispute: 46,
  ETaskSecurityLevelNotSamplingConsensus: 47,
  EInvalidDeviceType: 48,
  EInvalidKeyRotationCounter: 49,
  EPublicKeyCommitmentMismatch: 50,
  ETaskIsNotConfidentialCompute: 51,
  EInvalidNumClaimedComputeUnitsPerStack: 52,
  EStackAlreadyClaimed: 53,
  ENodeNotSelectedForClaim: 54,
} as const;

export type DbErrorName = keyof typeof DB_ERRORS;

/** The name of a db abort code, or undefined when the code is not one of the db module's. */
export function dbErrorName(code: number): DbErrorName | undefined {
  const offset = code - EBASE;
  return (Object.keys(DB_ERRORS) as DbErrorName[]).find((name) => DB_ERRORS[name] === offset);
}

/** The numeric abort code of a named db error. */
export function dbErrorCode(name: DbErrorName): number {
  return EBASE + DB_ERRORS[name];
}

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
  throw new MoveAbortError({ name: 'EFieldDoesNotExist', code: 1, module: 'dynamic_field' }, detail);
}

/** A balance::split larger than the balance (contracts.md §2.9): sui::balance::ENotEnough, code 2. */
export function notEnough(detail: string): never {
  throw new MoveAbortError({ name: 'ENotEnough', code: 2, module: 'balance' }, detail);
}

/**
 * u64 overflow, underflow or division by zero. Move reports these as an arithmetic error, not an abort
 * code (contracts.md §2.20); the dev network surfaces them as name 'ArithmeticError', module 'db', code 0.
 */
export function arithmeticError(detail: string): never {
  throw new MoveAbortError({ name: 'ArithmeticError', code: 0, module: 'db' }, detail);
}
