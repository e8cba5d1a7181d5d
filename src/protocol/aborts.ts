/**
 * The abort codes a transaction of the daemon can meet (contracts.md §2.20, §2.21): the db module's named
 * errors, EBase + offset, and the framework aborts the contract reaches. Both networks name aborts from
 * this one table.
 */

/** EBase of the db module: every named db abort is EBase + its offset. */
export const EBASE = 312_012_000;

/** The db module's abort codes at HEAD, as offsets from EBase (+8 is unused). */
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

const DB_NAMES = new Map<number, DbErrorName>(
  (Object.keys(DB_ERRORS) as DbErrorName[]).map((name) => [EBASE + DB_ERRORS[name], name]),
);

/** The name of a db abort code, or undefined when the code is not one of the db module's. */
export function dbErrorName(code: number): DbErrorName | undefined {
  return DB_NAMES.get(code);
}

/** The numeric abort code of a named db error. */
export function dbErrorCode(name: DbErrorName): number {
  return EBASE + DB_ERRORS[name];
}

/** Framework aborts the contract reaches (§2.20), by module and code. */
export const FRAMEWORK_ABORTS = {
  /** A missing Table or ObjectTable key: sui::dynamic_field::EFieldDoesNotExist. */
  fieldDoesNotExist: { name: 'EFieldDoesNotExist', code: 1, module: 'dynamic_field' },
  /** A balance::split larger than the balance (the pooled fee treasury short): sui::balance::ENotEnough. */
  notEnough: { name: 'ENotEnough', code: 2, module: 'balance' },
} as const;

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

/** Aborts whose cause is not the caller's input, explained (contracts.md). */
const HINTS: Record<string, string> = {
  'balance:2':
    "the network's pooled fee treasury cannot pay it now (attesters are paid on top of node fees, contracts.md §4.3)",
};

/** An abort as the operator reads it: its name, code and module, and its cause where one is known. */
export function describeAbort(abort: { name: string; code: number; module: string }): string {
  const hint = HINTS[`${abort.module}:${abort.code}`];
  return `${abort.name} (abort code ${abort.code} in ${abort.module})${hint ? `: ${hint}` : ''}`;
}

/**
 * u64 overflow, underflow or division by zero: Move reports an arithmetic error, not an abort code. Both
 * networks name it so, with code 0, in the module where it happened.
 */
export const ARITHMETIC_ERROR = 'ArithmeticError';
