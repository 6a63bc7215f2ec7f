import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { EventDefinition, EventDefinitionPatch, EventDefinitionQuery, Project } from '../../storage';
import { EVENT_DEFINITION_ORDERINGS } from '../../storage/definitions/definitions-store';
import { loadEmbeddedUsers } from '../invites/embedded-user';
import { tagify } from '../../core/definitions/tags';

const DAY_MS = 86_400_000;

export interface ListQuery {
  search?: string;
  event_type?: EventDefinitionQuery['eventType'];
  ordering?: string;
}

/** PostHog's `ordering`: comma-separated keys, `-` for descending; unknown keys are ignored. */
export function toDefinitionQuery(query: ListQuery, page: { limit: number; offset: number }): EventDefinitionQuery {
  const ordering = (query.ordering ?? '')
    .split(',')
    .map((raw) => raw.trim())
    .filter((raw) => Object.hasOwn(EVENT_DEFINITION_ORDERINGS, raw.replace(/^-/, '')))
    .map((raw) => ({ field: raw.replace(/^-/, '') as keyof typeof EVENT_DEFINITION_ORDERINGS, descending: raw.startsWith('-') }));
  return { ...page, search: query.search, eventType: query.event_type, ordering };
}

export interface PatchBody {
  owner?: number | null;
  description?: string | null;
  tags?: string[];
  verified?: boolean;
  post_to_chat?: boolean;
}

export async function toDefinitionPatch(deps: Deps, project: Project, body: PatchBody): Promise<EventDefinitionPatch> {
  if (body.owner !== undefined && body.owner !== null) {
    const members = await deps.storage.management.listMembers(project.organizationId);
    if (!members.some((m) => m.id === body.owner)) throw new AppError('invalid_input', `Invalid pk "${body.owner}" - object does not exist.`, 'owner');
  }
  return {
    owner: body.owner,
    description: body.description,
    tags: body.tags === undefined ? undefined : tagify(body.tags),
    verified: body.verified,
    postToChat: body.post_to_chat,
  };
}

/** Response bodies with the 30-day volume and query usage, and the users, looked up once. */
export async function toDefinitionBodies(deps: Deps, teamId: number, definitions: EventDefinition[]) {
  const { definitions: store } = deps.storage;
  const names = definitions.map((d) => d.name);
  const now = deps.now();
  const since = new Date(now.getTime() - 30 * DAY_MS);
  const [volumes, usage, users] = await Promise.all([
    store.eventVolumes(teamId, names, since, now),
    store.eventQueryUsage(teamId, names, since),
    loadEmbeddedUsers(deps, definitions.flatMap((d) => [d.updatedBy, d.verifiedBy])),
  ]);
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  const user = (id: number | null) => (id !== null && users.get(id)) || null;
  return definitions.map((d) => ({
    id: d.id,
    name: d.name,
    owner: d.owner,
    description: d.description,
    tags: d.tags,
    volume_30_day: volumes ? (volumes.get(d.name) ?? 0) : null,
    query_usage_30_day: usage.get(d.name) ?? 0,
    created_at: iso(d.createdAt),
    updated_at: iso(d.updatedAt),
    updated_by: user(d.updatedBy),
    last_seen_at: iso(d.lastSeenAt),
    last_updated_at: iso(d.lastUpdatedAt),
    verified: d.verified,
    verified_at: iso(d.verifiedAt),
    verified_by: user(d.verifiedBy),
    // The spec types is_action as a string (PostHog computes it in a serializer method, which its
    // schema shows as a string); no event definition here is an action.
    is_action: 'false',
    action_id: null,
    is_calculating: false,
    last_calculated_at: null,
    created_by: null,
    post_to_chat: d.postToChat,
  }));
}
