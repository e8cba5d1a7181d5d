import { toU64 } from '../internal/u64.ts';

/**
 * The Atoma db module's constants (contracts.md §6, at 9e53429), as every layer of the daemon needs them.
 * Amounts, ids and counts are u64 on chain: bigints here.
 */

/** The price denominator: prices are per 1,000,000 compute units. */
export const ONE_MILLION_COMPUTE_UNITS = 1_000_000n;
/** Every subscription's max_num_compute_units, so the most units a stack can have. */
export const COMPUTE_UNITS_PER_STACK = 1_000_000n;
/** A stack try-settled in epoch E is claimable from E + 1; attestations are accepted while epoch <= E + 1. */
export const STACK_DISPUTE_SETTLEMENT_DELAY = 1n;
/** The length of a committed proof and of a leaf slot. */
export const BYTES_PER_HASH_COMMITMENT = 32;
/** Every node's reputation: it starts at 50 and no code ever changes it (contracts.md §1.4). */
export const REPUTATION_SCORE_START = 50;
export const MAX_TASK_ROLE = 7;
export const MAX_REPUTATION_SCORE = 100;
export const PERMILLE = 1000n;

/** Security levels at HEAD (1 and 2 were swapped before Dec 2024; contracts.md §1.5). */
export const SecurityLevel = { NoSecurity: 0, ConfidentialCompute: 1, SamplingConsensus: 2 } as const;
export type SecurityLevelValue = (typeof SecurityLevel)[keyof typeof SecurityLevel];

export function isSecurityLevel(level: number): level is SecurityLevelValue {
  return level === 0 || level === 1 || level === 2;
}

/**
 * The AtomaDb parameters that change what a stack costs and pays, with the values a fresh deployment has
 * (contracts.md §1.3). The admin can change them; no event says so.
 */
export interface ProtocolParameters {
  /** 1200: a SamplingConsensus stack pays the node 1.2x. */
  sampling_consensus_charge_permille: bigint;
  /** 12: the buyer's extra surcharge on SamplingConsensus stacks (never paid out). */
  cross_validation_extra_nodes_charge_permille: bigint;
  /** 10: the chance, in permille, that a SamplingConsensus try-settle samples attesters. */
  cross_validation_probability_permille: bigint;
  /** k, 1: attester slots after the settler's in a ticket, and the divisor of attester rewards. */
  cross_validation_extra_nodes_count: bigint;
  /** 100: the share of an absent attester's collateral slashed at claim time (collateral is always 0). */
  permille_to_slash_node_on_timeout: bigint;
}

/** The parameters' names, in their declaration order. */
export const PARAMETER_NAMES = [
  'sampling_consensus_charge_permille',
  'cross_validation_extra_nodes_charge_permille',
  'cross_validation_probability_permille',
  'cross_validation_extra_nodes_count',
  'permille_to_slash_node_on_timeout',
] as const satisfies readonly (keyof ProtocolParameters)[];

export const DEFAULT_PARAMETERS: Readonly<ProtocolParameters> = Object.freeze({
  sampling_consensus_charge_permille: 1200n,
  cross_validation_extra_nodes_charge_permille: 12n,
  cross_validation_probability_permille: 10n,
  cross_validation_extra_nodes_count: 1n,
  permille_to_slash_node_on_timeout: 100n,
});

/** The parameters of AtomaDb (or of anything holding them, like the dev network's AtomaDb object). */
export function pickParameters(source: ProtocolParameters): ProtocolParameters {
  return {
    sampling_consensus_charge_permille: source.sampling_consensus_charge_permille,
    cross_validation_extra_nodes_charge_permille: source.cross_validation_extra_nodes_charge_permille,
    cross_validation_probability_permille: source.cross_validation_probability_permille,
    cross_validation_extra_nodes_count: source.cross_validation_extra_nodes_count,
    permille_to_slash_node_on_timeout: source.permille_to_slash_node_on_timeout,
  };
}

export function sameParameters(a: ProtocolParameters | null, b: ProtocolParameters | null): boolean {
  if (a === null || b === null) return a === b;
  return PARAMETER_NAMES.every((key) => a[key] === b[key]);
}

/**
 * The parameters out of a record holding them as u64 values (AtomaDb's JSON, a stored copy): the
 * parameters, or the name of the first one missing or malformed.
 */
export function readParameters(record: Record<string, unknown>): ProtocolParameters | { missing: string } {
  const out: Partial<Record<keyof ProtocolParameters, bigint>> = {};
  for (const name of PARAMETER_NAMES) {
    const value = toU64(record[name]);
    if (value === undefined) return { missing: name };
    out[name] = BigInt(value);
  }
  return out as ProtocolParameters;
}
