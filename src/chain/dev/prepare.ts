import { asciiArg, u64Arg, u64List } from '../arguments.ts';
import { ChainRejectedError, type Operation } from '../chain.ts';
import * as rules from './rules.ts';

/** An operation ready to run: its entry function on a node, and how many items its gas is counted for. */
export interface PreparedOperation {
  items: number;
  run: (tx: rules.TxContext, nodeId: bigint) => void;
}

/** Parses an operation's arguments (refusing malformed ones before execution) into its entry function. */
export function prepareOperation(op: Operation): PreparedOperation {
  switch (op.kind) {
    case 'register_node':
      return { items: 0, run: (tx) => void rules.registerNode(tx) };
    case 'add_node_to_model': {
      const model = asciiArg(op.model_name, 'model_name');
      const echelon = u64Arg(op.echelon_id, 'echelon_id');
      return { items: 0, run: (tx, node) => rules.addNodeToModel(tx, node, model, echelon) };
    }
    case 'subscribe_node_to_task':
    case 'update_node_subscription': {
      const task = u64Arg(op.task_small_id, 'task_small_id');
      const price = u64Arg(op.price_per_one_million_compute_units, 'price_per_one_million_compute_units');
      const fn =
        op.kind === 'subscribe_node_to_task' ? rules.subscribeNodeToTask : rules.updateNodeSubscription;
      return { items: 0, run: (tx, node) => fn(tx, node, task, price) };
    }
    case 'unsubscribe_node_from_task': {
      const task = u64Arg(op.task_small_id, 'task_small_id');
      return { items: 0, run: (tx, node) => rules.unsubscribeNodeFromTask(tx, node, task) };
    }
    case 'try_settle_stack': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const claimed = u64Arg(op.num_claimed_compute_units, 'num_claimed_compute_units');
      const proof = op.committed_stack_proof;
      const leaf = op.stack_merkle_leaf;
      return {
        items: 0,
        run: (tx, node) => void rules.trySettleStack(tx, node, stack, claimed, proof, leaf),
      };
    }
    case 'submit_stack_settlement_attestation': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const proof = op.committed_stack_proof;
      const leaf = op.stack_merkle_leaf;
      return {
        items: 0,
        run: (tx, node) => rules.submitStackSettlementAttestation(tx, node, stack, proof, leaf),
      };
    }
    case 'start_attestation_dispute': {
      const stack = u64Arg(op.stack_small_id, 'stack_small_id');
      const commitment = op.attestation_commitment;
      return { items: 0, run: (tx, node) => rules.startAttestationDispute(tx, node, stack, commitment) };
    }
    case 'claim_funds': {
      const stacks = u64List(op.settled_ticket_ids, 'settled_ticket_ids');
      return { items: stacks.length, run: (tx, node) => rules.claimFunds(tx, node, stacks) };
    }
    case 'claim_funds_for_stacks': {
      const stacks = u64List(op.stack_small_ids, 'stack_small_ids');
      const units = u64List(op.num_compute_units_per_stack_to_claim, 'num_compute_units_per_stack_to_claim');
      return {
        items: stacks.length,
        run: (tx, node) => rules.claimFundsForStacks(tx, node, stacks, units),
      };
    }
    default: {
      const unknown: { kind: string } = op;
      throw new ChainRejectedError('invalid_argument', `unknown operation ${unknown.kind}`);
    }
  }
}
