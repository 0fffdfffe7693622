/**
 * Who clicked. JupyterLab sends every kernel message with an empty `username` in its header:
 * it never gives its kernel connections a name. The kernel reads that field to say who decided
 * a card (acp_notebook/_widgets/_sender.py), so this module gives the kernel connection behind
 * our widgets the signed-in user's name (the identity the server reports: a JupyterHub user,
 * or the anonymous name jupyter-collaboration shows beside a cursor), once the server said it.
 *
 * The name lives in a private field of @jupyterlab/services' KernelConnection (`_username`,
 * read for every message it sends); where that field is missing or already set, nothing changes.
 */

/** The longest name sent (the kernel cuts at the same length). */
export const MAX_NAME = 64;

let userName = '';
const unnamed = new Set<object>();

/** The name to show for a user identity: its display name, else its name, else its username. */
export function identityName(identity: unknown): string {
  const id = (identity ?? {}) as { display_name?: unknown; name?: unknown; username?: unknown };
  for (const field of [id.display_name, id.name, id.username]) {
    if (typeof field === 'string' && field.trim()) {
      return field.trim().split(/\s+/).join(' ').slice(0, MAX_NAME);
    }
  }
  return '';
}

/** Give `kernel` (a kernel connection) the user's name: now if it is known, else once it is.
 * Returns whether the connection was named now. */
export function nameConnection(kernel: unknown, name: string = userName): boolean {
  const connection = kernel as { _username?: unknown } | null | undefined;
  if (!connection || typeof connection !== 'object' || connection._username !== '') {
    return false; // not JupyterLab's connection, or it has a name already
  }
  if (!name) {
    unnamed.add(connection);
    return false;
  }
  connection._username = name;
  unnamed.delete(connection);
  return true;
}

/** The signed-in user's name, once the server said it: names the connections waiting for it. */
export function setUserName(name: string): void {
  userName = name;
  for (const connection of Array.from(unnamed)) {
    nameConnection(connection, name);
  }
}
