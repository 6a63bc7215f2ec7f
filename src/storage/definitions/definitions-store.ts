import type { Database } from '../db';
import { createEventDefinitionStore, type EventDefinitionStore } from './event-definitions';
import type { EventsSourceRef } from './events-source';
import { createPropertyDefinitionStore, type PropertyDefinitionStore } from './property-definitions';

export type { EventDefinition, EventDefinitionPatch, EventDefinitionQuery } from './event-definitions';
export { EVENT_DEFINITION_ORDERINGS } from './event-definitions';
export type { PropertyDefinition, PropertyDefinitionPatch, PropertyDefinitionQuery, PropertyKind } from './property-definitions';

export interface DefinitionsStore extends EventDefinitionStore, PropertyDefinitionStore {
  eventNames(teamId: number): Promise<string[]>;
  propertyNames(teamId: number, kind: 'event' | 'person'): Promise<Array<{ name: string; isNumerical: boolean }>>;
  deleteTeam(teamId: number): Promise<void>;
}

export function createDefinitionsStore(db: Database, events: EventsSourceRef = {}): DefinitionsStore {
  return {
    ...createEventDefinitionStore(db, events),
    ...createPropertyDefinitionStore(db),
    async eventNames(teamId) {
      const rows = await db.query<{ name: string }>('SELECT name FROM event_definitions WHERE team_id = ? ORDER BY name', [teamId]);
      return rows.map((r) => r.name);
    },
    async propertyNames(teamId, kind) {
      const rows = await db.query<{ name: string; is_numerical: boolean }>(
        'SELECT name, is_numerical FROM property_definitions WHERE team_id = ? AND kind = ? ORDER BY name',
        [teamId, kind],
      );
      return rows.map((r) => ({ name: r.name, isNumerical: r.is_numerical }));
    },
    async deleteTeam(teamId) {
      await db.run('DELETE FROM event_definitions WHERE team_id = ?', [teamId]);
      await db.run('DELETE FROM property_definitions WHERE team_id = ?', [teamId]);
      await db.run('DELETE FROM event_properties WHERE team_id = ?', [teamId]);
      await db.run('DELETE FROM event_query_usage WHERE team_id = ?', [teamId]);
    },
  };
}
