/**
 * The presence probe's one activity (core/tool-presence.ts): every tool worker process serves it on
 * its tool queue's presence queue, with slots of its own, so it answers even while every tool slot is
 * busy. It does nothing: that a worker picked it up is the answer.
 */
export interface PresenceActivities {
  /** Answers at once, naming the tool worker process that picked it up. */
  toolWorkerPresent(): Promise<{ identity: string }>;
}

/** The presence activity of the tool worker process `identity` (e.g. `<pid>@<host>`). */
export function createPresenceActivities(identity: string): PresenceActivities {
  return {
    async toolWorkerPresent() {
      return { identity };
    },
  };
}
