// Test-only workflow code for replay.test.ts: registered under the probe's workflow type name, it
// starts a timer where the recorded probe scheduled its `recordPlatformProbe` activity, so replaying
// a probe history against it must fail with a DeterminismViolationError (no timing involved: the
// first command differs whatever the clock says).
import { sleep } from '@temporalio/workflow';

export async function platformProbeWorkflow(): Promise<void> {
  await sleep('1 second');
}
