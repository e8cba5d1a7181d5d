/** Where the Sui fullnode and the Atoma deployment are, and which key signs: validated and normalized. */
export interface SuiSettings {
  /** The fullnode's gRPC(-web) URL, e.g. https://fullnode.testnet.sui.io:443, without a trailing slash. */
  readonly url: string;
  /** Which setting gave the URL, for messages: `--sui-url`, `[atoma_sui] http_rpc_node_addr in <file>`, ... */
  readonly urlSource?: string;
  /** The Atoma package whose db module is called (the latest version, after an upgrade): 0x + 64 hex. */
  readonly packageId: string;
  /** The shared AtomaDb object: 0x + 64 hex. */
  readonly atomaDbId: string;
  /** AtomaDb's initial shared version, to check against the object's; discovered when not given. */
  readonly atomaDbInitialSharedVersion: bigint | undefined;
  /** A Sui CLI keystore file (sui.keystore). */
  readonly keystore: string;
  /** Which setting gave the keystore, for messages: `--sui-keystore`, `keystore in <client.yaml>`, the default. */
  readonly keystoreSource?: string | undefined;
  /** The keystore address that signs (0x + 64 hex; client.yaml's active_address); the first key when not given. */
  readonly address: string | undefined;
  /** The most MIST one transaction may spend on gas. */
  readonly gasBudgetCap: bigint;
  /** The deployment's USDC package (config.toml's usdc_package_id), when given. */
  readonly usdcPackageId?: string | undefined;
}
