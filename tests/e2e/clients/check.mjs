// Shared by the client scripts: the door's URL and a failure that names what differed.
export const base = process.env.KEVLAYA_URL;
if (!base) {
  console.error('KEVLAYA_URL is not set');
  process.exit(2);
}
export function check(cond, what, got) {
  if (!cond) {
    console.error(`FAIL: ${what}` + (got === undefined ? '' : `: ${JSON.stringify(got)}`));
    process.exit(1);
  }
}
// Runs `fn`, which must throw; returns the error.
export async function raises(fn, what) {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  check(false, `${what} did not raise`);
}
export const user = [{ role: 'user', content: 'Once upon a time' }];
