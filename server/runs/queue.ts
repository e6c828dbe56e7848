/**
 * An unbounded async queue: producers push without waiting, one consumer iterates. Ending the iteration
 * early (break, return) detaches the consumer; what was pushed after that is dropped.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #waiting: ((result: IteratorResult<T>) => void) | undefined;
  #closed = false;
  #onDetach: (() => void) | undefined;

  constructor(onDetach?: () => void) {
    this.#onDetach = onDetach;
  }

  push(item: T): void {
    if (this.#closed) return;
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#waiting && this.#items.length === 0) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.#items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.#waiting = resolve));
      },
      return: () => {
        this.#closed = true;
        this.#items = [];
        this.#onDetach?.();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
