import { ScheduleNotFoundError } from '@temporalio/client';
import type { TestStack } from '../harness/stack.js';

/** The Temporal Schedule of a row, or null when Temporal has none. */
export async function describeTemporalSchedule(stack: TestStack, scheduleId: string) {
  try {
    return await stack.deps.temporal.client.schedule.getHandle(`schedule-${scheduleId}`).describe();
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return null;
    throw error;
  }
}

/** Test files share one Temporal server: remove this file's schedules so nothing keeps firing. */
export async function deleteTemporalSchedules(stack: TestStack): Promise<void> {
  const rows = await stack.db.selectFrom('schedules').select('id').execute();
  for (const { id } of rows) {
    await stack.deps.temporal.client.schedule.getHandle(`schedule-${id}`).delete().catch(() => undefined);
  }
}
