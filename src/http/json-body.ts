import type { FastifyInstance } from 'fastify';
import { parseJson } from '../internal/json.ts';
import { U64_MAX } from '../internal/u64.ts';
import { ProblemError } from '../problems/catalog.ts';

/**
 * JSON bodies keep integers exact: JSON.parse would round 18446744073709551615 to ...552000, a silent
 * change to a price or a unit count. Integers beyond 2^53 - 1 are parsed as bigint (from their source
 * text), and the `u64` schema keyword accepts a safe integer or such a bigint within 0..2^64 - 1.
 */
export function installJsonBody(app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // A compressed body would be read as if it were not (and fail as malformed JSON, or worse, parse).
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      done(
        new ProblemError(
          'unsupported_media_type',
          `the body is sent with Content-Encoding ${JSON.stringify(encoding)}; send it uncompressed`,
          { parameter: 'content-encoding' },
        ),
        undefined,
      );
      return;
    }
    // JSON is UTF-8 (RFC 8259): a body declared in another charset would be read as something it is not.
    const charset = charsetOf(request.headers['content-type']);
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      done(
        new ProblemError(
          'unsupported_media_type',
          `the body is declared charset=${charset}; JSON bodies are UTF-8: send it as UTF-8 with Content-Type: application/json (or charset=utf-8)`,
          { parameter: 'content-type' },
        ),
        undefined,
      );
      return;
    }
    const text = String(body);
    if (text.trim() === '') {
      done(
        new ProblemError('malformed_json', 'the body is empty; send a JSON object (at least {})'),
        undefined,
      );
      return;
    }
    try {
      done(null, parseJson(text));
    } catch (error) {
      done(
        new ProblemError('malformed_json', `the body is not valid JSON: ${(error as Error).message}`),
        undefined,
      );
    }
  });
}

/** The charset parameter of a Content-Type header, unquoted; undefined when it has none. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2] ?? '') : undefined;
}

/** The Ajv keyword `u64: true`: a non-negative safe integer, or a bigint up to 2^64 - 1. */
export const u64Keyword = {
  keyword: 'u64',
  errors: true,
  validate: function validateU64(this: unknown, _schema: boolean, data: unknown): boolean {
    const ok =
      (typeof data === 'number' && Number.isSafeInteger(data) && data >= 0) ||
      (typeof data === 'bigint' && data >= 0n && data <= U64_MAX);
    if (!ok) {
      (validateU64 as unknown as { errors: object[] }).errors = [
        { keyword: 'u64', message: 'must be an integer from 0 to 18446744073709551615 (a u64)', params: {} },
      ];
    }
    return ok;
  },
};
