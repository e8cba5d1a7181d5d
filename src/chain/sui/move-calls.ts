import type { Transaction } from '@mysten/sui/transactions';
import { normalizeSuiObjectId, SUI_RANDOM_OBJECT_ID } from '@mysten/sui/utils';
import { asciiArg, u64Arg, u64List } from '../arguments.ts';
import { type Badge, ChainRejectedError, type Operation } from '../chain.ts';

/**
 * The Move-call table: which entry function of the Atoma db module each Operation becomes, and its
 * arguments in the Move signature's order (contracts.md §0, §2): the AtomaDb as a mutable shared object,
 * the NodeBadge at its current version, the values, and Random (0x8) immutable for try_settle_stack.
 */

export const RANDOM_ID = normalizeSuiObjectId(SUI_RANDOM_OBJECT_ID);

/** One db entry function call: its name, the badge it acts with, and its arguments after (self, badge). */
export interface MoveCall {
  function: string;
  badge: Badge | undefined;
  args: (tx: Transaction) => ReturnType<Transaction['pure']['u64']>[];
  random: boolean;
}

/** The objects a call takes besides its values, at the refs the caller resolved. */
export interface CallObjects {
  packageId: string;
  atomaDb: { objectId: string; initialSharedVersion: string };
  badge: { objectId: string; version: string; digest: string } | undefined;
  /** Random's initial shared version; set when the call takes Random. */
  randomVersion: string | undefined;
}

/**
 * The db entry function of an operation and its arguments after (AtomaDb, badge). Malformed arguments are
 * refused here, before anything is built.
 */
export function moveCall(op: Operation): MoveCall {
  const call = (fn: string, badge: Badge | undefined, args: MoveCall['args'], random = false): MoveCall => ({
    function: fn,
    badge,
    args,
    random,
  });
  switch (op.kind) {
    case 'register_node':
      return call('register_node_entry', undefined, () => []);
    case 'add_node_to_model': {
      const model = asciiArg(op.model_name, 'model_name');
      const echelon = u64Arg(op.echelon_id, 'echelon_id');
      return call('add_node_to_model', op.badge, (tx) => [tx.pure.string(model), tx.pure.u64(echelon)]);
    }
    case 'subscribe_node_to_task':
    case 'update_node_subscription': {
      const task = u64Arg(op.task_small_id, 'task_small_id');
      const price = u64Arg(op.price_per_one_million_compute_units, 'price_per_one_million_compute_units');
      return call(op.kind, op.badge, (tx) => [tx.pure.u64(task), tx.pure.u64(price)]);
    }
    case 'unsubscribe_node_from_task': {
      const task = u64Arg(op.task_small_id, 'task_small_id');
      return call('unsubscribe_node_from_task', op.badge, (tx) => [tx.pure.u64(task)]);
    }
    case 'try_settle_stack': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const claimed = u64Arg(op.num_claimed_compute_units, 'num_claimed_compute_units');
      const proof = op.committed_stack_proof;
      const leaf = op.stack_merkle_leaf;
      return call(
        'try_settle_stack',
        op.badge,
        (tx) => [
          tx.pure.u64(stack),
          tx.pure.u64(claimed),
          tx.pure.vector('u8', proof),
          tx.pure.vector('u8', leaf),
        ],
        true,
      );
    }
    case 'submit_stack_settlement_attestation': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const proof = op.committed_stack_proof;
      const leaf = op.stack_merkle_leaf;
      return call('submit_stack_settlement_attestation', op.badge, (tx) => [
        tx.pure.u64(stack),
        tx.pure.vector('u8', proof),
        tx.pure.vector('u8', leaf),
      ]);
    }
    case 'start_attestation_dispute': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const commitment = op.attestation_commitment;
      return call('start_attestation_dispute', op.badge, (tx) => [
        tx.pure.u64(stack),
        tx.pure.vector('u8', commitment),
      ]);
    }
    case 'claim_funds': {
      const stacks = u64List(op.settled_ticket_ids, 'settled_ticket_ids');
      return call('claim_funds', op.badge, (tx) => [tx.pure.vector('u64', stacks)]);
    }
    case 'claim_funds_for_stacks': {
      const stacks = u64List(op.stack_small_ids, 'stack_small_ids');
      const units = u64List(op.num_compute_units_per_stack_to_claim, 'num_compute_units_per_stack_to_claim');
      return call('claim_funds_for_stacks', op.badge, (tx) => [
        tx.pure.vector('u64', stacks),
        tx.pure.vector('u64', units),
      ]);
    }
    default: {
      const unknown: { kind: string } = op;
      throw new ChainRejectedError('invalid_argument', `unknown operation ${unknown.kind}`);
    }
  }
}

/** Adds the call to the transaction: AtomaDb, the badge, the values, then Random when the call takes it. */
export function addMoveCall(tx: Transaction, call: MoveCall, objects: CallObjects): void {
  const { atomaDb, badge, randomVersion } = objects;
  const args = [
    tx.sharedObjectRef({
      objectId: atomaDb.objectId,
      initialSharedVersion: atomaDb.initialSharedVersion,
      mutable: true,
    }),
    ...(badge
      ? [tx.objectRef({ objectId: badge.objectId, version: badge.version, digest: badge.digest })]
      : []),
    ...call.args(tx),
    ...(randomVersion === undefined
      ? []
      : [tx.sharedObjectRef({ objectId: RANDOM_ID, initialSharedVersion: randomVersion, mutable: false })]),
  ];
  tx.moveCall({ target: `${objects.packageId}::db::${call.function}`, arguments: args });
}
