import { t } from 'elysia';

/** Wire shapes shared by every module. */
export const ErrorBody = t.Object(
  {
    type: t.String(),
    code: t.String(),
    detail: t.String(),
    attr: t.Union([t.String(), t.Null()]),
  },
  { description: 'Every error of every endpoint.' },
);

export const PageQuery = t.Object({
  limit: t.Optional(t.Numeric({ minimum: 1 })),
  offset: t.Optional(t.Numeric({ minimum: 0 })),
});

export const Envelope = <T extends Parameters<typeof t.Array>[0]>(item: T) =>
  t.Object({
    count: t.Integer(),
    next: t.Union([t.String(), t.Null()]),
    previous: t.Union([t.String(), t.Null()]),
    results: t.Array(item),
  });

export const EmbeddedUser = t.Object({
  id: t.Integer(),
  uuid: t.String(),
  distinct_id: t.String(),
  first_name: t.String(),
  email: t.String(),
});

/** Responses every authenticated route can give. */
export const authErrors = { 401: ErrorBody, 404: ErrorBody } as const;
