import type { EncodedRows } from '../storage/events';
import { fillPersonSlot, fillTeamSlots } from '../storage/events/log/row-lines';
import type { IntakeContext } from '../storage/events';
import type { PersonStore } from '../storage/persons/types';
import type { SeenTracker } from '../storage/seen/seen-tracker';
import { fromPersonInput, type PersonInput } from './person-input';
import type { PreparedRows } from './prepare-rows';

/**
 * The stateful half of processing, on the thread that owns persons and in log order: each row's
 * person changes (create, `$set`, merges), the request's definitions, and the project and
 * person ids written into its row's slots. The rows are not encoded again.
 */
export function createRowApplier(persons: PersonStore, seen: SeenTracker) {
  return async function applyRows(ctx: IntakeContext, prepared: PreparedRows): Promise<EncodedRows> {
    if (prepared.rows > 0) {
      await persons.ensureLoaded(ctx.teamId);
      const inputs = typeof prepared.people === 'string' ? (JSON.parse(prepared.people) as PersonInput[]) : prepared.people;
      const lines = Buffer.from(prepared.lines.buffer, prepared.lines.byteOffset, prepared.lines.byteLength);
      fillTeamSlots(lines, prepared.teams, ctx.teamId);
      for (let i = 0; i < inputs.length; i++) {
        const plan = persons.processEvent(ctx.teamId, fromPersonInput(inputs[i]));
        fillPersonSlot(lines, prepared.persons[i], plan.personId);
      }
      seen.recordSummary(ctx.teamId, prepared.seen);
    }
    return { teamId: ctx.teamId, lines: prepared.lines, rows: prepared.rows, uuids: prepared.uuids, span: prepared.span, dropped: prepared.dropped, propertyKeys: prepared.propertyKeys };
  };
}
