import pkg from '../../package.json' with { type: 'json' };

/** The daemon's version, from package.json. */
export const VERSION: string = pkg.version;
