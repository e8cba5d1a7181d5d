import { type Static, Type } from 'typebox';
import { Nullable, StringEnum, U64 } from './common.ts';

/** What a node earned and can claim (GET /earnings/nodes/{node_id}), in the smallest USDC unit. */

const Counts = (description: string) =>
  Type.Object(
    {
      open: Type.Integer({ description: 'Not settled (try-settled) yet, and not claimed' }),
      settling: Type.Integer({
        description: 'Settled, in the dispute window (claimable from the next epoch)',
      }),
      claimable: Type.Integer({ description: 'Settled, past the dispute window, undisputed, unclaimed' }),
      claimed: Type.Integer({ description: 'Claimed, through either claim path' }),
      disputed: Type.Integer({
        description: 'Settled and in dispute: locked, the contract has no resolution',
      }),
    },
    { description },
  );

export const EarningsSchema = Type.Object({
  node_small_id: U64(),
  epoch: Nullable(U64(), 'The current epoch as indexed; null when the event source never said'),
  claimed: U64("The node's fees received through claims, all time"),
  claimable: U64('Fees of settled stacks that can be claimed now'),
  settling: U64('Fees of settled stacks still inside the dispute window'),
  disputed: U64('Fees of settled stacks under dispute (locked: the contract has no resolution)'),
  unsettled: U64('The fee of the usage reported on open stacks, not settled yet'),
  attester_rewards: U64("What the node was credited for attesting other nodes' stacks"),
  refunded_to_users: U64("The refunds the node's claims paid to the stacks' buyers"),
  stacks: Counts("The node's stacks by state"),
  unsettled_stacks: Type.Integer({
    description:
      'Open stacks with usage reported: those whose fee `unsettled` sums (the others have none yet)',
  }),
  settled_stacks: Type.Array(
    Type.Object({
      stack_small_id: U64(),
      state: StringEnum(['settling', 'claimable', 'disputed']),
      num_claimed_compute_units: U64('The units its settlement claims'),
      node_fee_amount: Nullable(
        U64(),
        'What claiming it will pay the node; null where its price was never seen',
      ),
      claimable_from_epoch: Nullable(U64(), 'The first epoch it can be claimed in; null where not known'),
    }),
    {
      description:
        "The node's settled stacks not claimed yet, by small id: when each can be claimed, and for how much (a disputed one never)",
    },
  ),
  unpriced: Counts(
    'Stacks whose price or task the daemon never saw (first seen mid-history): counted in stacks, left out of the amounts, never guessed',
  ),
  by_epoch: Type.Array(
    Type.Object({
      epoch: U64('The epoch of the claims'),
      claimed: U64('Node fees claimed in that epoch'),
      stacks_claimed: Type.Integer(),
    }),
    {
      description: 'Claimed fees by the epoch of the claim, ascending (claims of unknown epoch are left out)',
    },
  ),
});

export type Earnings = Static<typeof EarningsSchema>;
export type StackStates = Earnings['stacks'];
