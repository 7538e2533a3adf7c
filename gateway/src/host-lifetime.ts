/**
 * A stdio gateway lives exactly as long as its host. It holds the broker token, so it must not
 * outlive whoever started it: it ends when its stdin closes (the host closed the pipe, quit or was
 * killed: the kernel closes a dead process's pipes), when stdout can no longer be written (EPIPE),
 * when its parent dies while something else holds stdin open (it is then re-parented, so its
 * parent's pid changes), and on SIGTERM/SIGINT. Ending closes the upstream (a stdio upstream is
 * signalled, not waited for) and exits within `graceMs` whatever the upstream does, so a host's
 * `close()` is not held and nothing is left running.
 */
export function endWithHost(shutdown: () => Promise<unknown>, options: { pollMs?: number; graceMs?: number } = {}): void {
  const { pollMs = 200, graceMs = 500 } = options;
  const parent = process.ppid;
  let ending = false;
  const end = () => {
    if (ending) return;
    ending = true;
    setTimeout(() => process.exit(0), graceMs).unref();
    void shutdown()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.stdin.once('end', end);
  process.stdin.once('close', end);
  process.stdout.once('error', end);
  process.once('SIGTERM', end);
  process.once('SIGINT', end);
  // Node reads process.ppid afresh each time: a changed value means the parent is gone.
  setInterval(() => {
    if (process.ppid !== parent) end();
  }, pollMs).unref();
}
