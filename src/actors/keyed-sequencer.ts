/**
 * Per-key ordering: tasks of one key start in the order they were handed in,
 * each once the one before it was admitted. A task is admitted when it calls
 * `admit` — for a command, once it entered its actor's mailbox, after which
 * the actor keeps the order — or, at the latest, when it settles. A task
 * with nobody ahead of it starts at once, synchronously, so a command that
 * has nothing to wait for enters its mailbox before the caller's next step.
 *
 * It is the one ordering device of the application layer: route commands
 * (keyed by route, admitted on entering the mailbox), durable proxy commands
 * (one key, admitted when settled, since they reach their proxy through the
 * read model) and repeats of a proxy acquisition (keyed by requestId).
 */
export class KeyedSequencer {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` once every earlier task of `key` was admitted; resolves as `task` does. */
  run<T>(key: string, task: (admit: () => void) => Promise<T>): Promise<T> {
    const ahead = this.tails.get(key);
    let admitted!: () => void;
    const mine = new Promise<void>((resolve) => (admitted = resolve));
    this.tails.set(key, mine);
    const admit = () => {
      admitted();
      if (this.tails.get(key) === mine) this.tails.delete(key);
    };
    const start = (): Promise<T> => {
      let running: Promise<T>;
      try {
        running = task(admit);
      } catch (e) {
        running = Promise.reject(e instanceof Error ? e : new Error(String(e)));
      }
      running.then(admit, admit);
      return running;
    };
    return ahead === undefined ? start() : ahead.then(start);
  }
}
