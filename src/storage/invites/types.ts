/** Organization invites as the rest of the code sees them (no storage engine types). */

export interface Invite {
  id: string;
  organizationId: string;
  targetEmail: string;
  firstName: string;
  message: string | null;
  level: number;
  emailingAttemptMade: boolean;
  createdBy: number | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface InviteInput {
  targetEmail: string;
  firstName: string;
  message: string | null;
  level: number;
}

export interface InviteStore {
  /** Newest first. */
  listInvites(organizationId: string, page: { limit: number; offset: number }): Promise<{ count: number; results: Invite[] }>;
  /**
   * Create invites in one transaction. Each replaces the invites already made for the same
   * e-mail address (case-insensitively) in the organization.
   */
  createInvites(organizationId: string, inputs: InviteInput[], createdBy: number, now: Date): Promise<Invite[]>;
  /** False when the organization has no such invite. */
  deleteInvite(organizationId: string, id: string): Promise<boolean>;
}
