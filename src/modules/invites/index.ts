import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin, resolveOrganization } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, PageQuery, authErrors } from '../../http/schemas';
import { Invite, InviteBulkBody, InviteCreateBody, InviteIdParams, InviteParams } from './model';
import { MAX_BULK_INVITES, createInvites, toInviteBodies } from './service';

/** Organization invites (`/api/organizations/:id|@current/invites/`). */
export const invitesModule = (deps: Deps) =>
  new Elysia({ name: 'invites', prefix: '/api/organizations/:parent_lookup_organization_id/invites', detail: { tags: ['invites'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const { organization } = await resolveOrganization(deps, principal, params.parent_lookup_organization_id);
        const page = parsePage(query);
        const { count, results } = await deps.storage.invites.listInvites(organization.id, page);
        return paginate(request.url, page, count, await toInviteBodies(deps, results));
      },
      { auth: true, params: InviteParams, query: PageQuery, response: { 200: Envelope(Invite), ...authErrors }, detail: { summary: 'List invites' } },
    )
    .post(
      '/',
      async ({ principal, params, body, set }) => {
        const { organization, level } = await resolveOrganization(deps, principal, params.parent_lookup_organization_id);
        const [invite] = await createInvites(deps, principal, organization.id, level, [body]);
        set.status = 201;
        return (await toInviteBodies(deps, [invite]))[0];
      },
      {
        auth: true,
        params: InviteParams,
        body: InviteCreateBody,
        response: { 201: Invite, 400: ErrorBody, 403: ErrorBody, ...authErrors },
        detail: { summary: 'Invite someone; replaces a pending invite for the same address' },
      },
    )
    .post(
      '/bulk/',
      async ({ principal, params, body, set }) => {
        const { organization, level } = await resolveOrganization(deps, principal, params.parent_lookup_organization_id);
        const invites = await createInvites(deps, principal, organization.id, level, body);
        set.status = 201;
        return toInviteBodies(deps, invites);
      },
      {
        auth: true,
        params: InviteParams,
        // PostHog checks the count before it validates any invite; one object is one invite.
        transform(ctx) {
          const list = Array.isArray(ctx.body) ? ctx.body : [ctx.body];
          if (list.length > MAX_BULK_INVITES) throw new AppError('invalid_input', 'A maximum of 20 invites can be sent in a single request.');
          ctx.body = list;
        },
        body: InviteBulkBody,
        response: { 201: t.Array(Invite), 400: ErrorBody, 403: ErrorBody, ...authErrors },
        detail: { summary: 'Invite up to 20 people at once' },
      },
    )
    .delete(
      '/:id/',
      async ({ principal, params, set }) => {
        const { organization } = await resolveOrganization(deps, principal, params.parent_lookup_organization_id);
        if (!(await deps.storage.invites.deleteInvite(organization.id, params.id))) throw new AppError('not_found', 'Not found.');
        set.status = 204;
      },
      { auth: true, params: InviteIdParams, response: { 204: t.Void(), ...authErrors }, detail: { summary: 'Cancel an invite' } },
    );
