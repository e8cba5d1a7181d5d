import type { FastifyReply } from 'fastify';

/** The payload as the route's response serializer writes it (our serializers all produce text). */
export function serialized(reply: FastifyReply, payload: unknown): string {
  const out = reply.serialize(payload);
  return typeof out === 'string' ? out : Buffer.from(out as ArrayBuffer).toString('utf8');
}
