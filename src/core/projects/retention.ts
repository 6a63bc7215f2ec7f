/**
 * Days of events a project keeps: its own `events_retention_days` when it has one (null:
 * forever), else the server's EVENTS_RETENTION_DAYS (unset: forever). What retention applies and
 * what the projects API reports.
 */
export function retentionDays(own: number | null | undefined, serverDefault: number | undefined): number | null {
  return own === undefined ? (serverDefault ?? null) : own;
}
